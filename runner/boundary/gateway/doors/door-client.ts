import { request } from "node:http";
import { CONTROL_HEADER } from "./control-key.ts";

/**
 * The runner's half of a run's own door (run-doors.ts): asks its gateway, on
 * loopback, to open the door of a run (answering the host folder to mount in
 * that run's box) or to close it. node:http, one socket, no agent, as /healthz.
 */
const DOOR_TIMEOUT_MS = 10_000;

export async function openRunDoor(port: number, runId: string, key: string): Promise<string> {
  const body = await askDoor(port, "POST", runId, key);
  if (typeof body.door !== "string" || !body.door) {
    throw new Error(`the gateway on port ${port} answered no door for run ${runId}`);
  }
  return body.door;
}

export async function closeRunDoor(port: number, runId: string, key: string): Promise<void> {
  await askDoor(port, "DELETE", runId, key);
}

function askDoor(
  port: number,
  method: "POST" | "DELETE",
  runId: string,
  /** The door control key (control-key.ts). */
  key: string,
): Promise<Record<string, unknown>> {
  const what = method === "POST" ? "open" : "close";
  return new Promise((resolve, reject) => {
    const fail = (reason: string) =>
      reject(
        new Error(
          `the gateway on port ${port} could not ${what} the door of run ${runId}: ${reason}`,
        ),
      );
    const ask = request(
      {
        host: "127.0.0.1",
        port,
        method,
        path: `/doors/${encodeURIComponent(runId)}`,
        headers: { [CONTROL_HEADER]: key },
        agent: false,
        timeout: DOOR_TIMEOUT_MS,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", (error) => fail(error.message));
        response.on("end", () => {
          let body: Record<string, unknown>;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
          } catch {
            return fail(`an answer that is not JSON (status ${response.statusCode})`);
          }
          if (response.statusCode === 200) resolve(body);
          else fail(typeof body.error === "string" ? body.error : `status ${response.statusCode}`);
        });
      },
    );
    ask.on("timeout", () => ask.destroy(new Error(`no answer within ${DOOR_TIMEOUT_MS / 1000} s`)));
    ask.on("error", (error) => fail(error.message));
    ask.end();
  });
}
