import { request } from "node:http";
import { join } from "node:path";
import { DOOR_SOCKET } from "../../runner/boundary/box/layout.ts";

/** What came back through a door: the status, the rule the door named, the body, and how long it took. */
export interface DoorAnswer {
  status: number;
  rule: string;
  body: string;
  ms: number;
}

/**
 * One absolute-form request through a run's door socket, as a box's client
 * sends it, on a connection of its own; with the run's token, or with none
 * (the run's page).
 */
export function throughDoor(
  dir: string,
  url: string,
  options: {
    token?: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  } = {},
): Promise<DoorAnswer> {
  const target = new URL(url);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const ask = request(
      {
        socketPath: join(dir, DOOR_SOCKET),
        method: options.method ?? "GET",
        path: url,
        headers: {
          host: target.host,
          ...(options.token
            ? {
                "proxy-authorization": `Basic ${Buffer.from(`${options.token}:x`).toString("base64")}`,
              }
            : {}),
          ...options.headers,
        },
        agent: false,
      },
      (response) => {
        let body = "";
        response.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            rule: String(response.headers["x-roster-rule"] ?? ""),
            body,
            ms: performance.now() - started,
          }),
        );
      },
    );
    ask.setTimeout(10_000, () => ask.destroy(new Error("no answer within 10 s")));
    ask.on("error", reject);
    ask.end(options.body);
  });
}
