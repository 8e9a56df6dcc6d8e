/**
 * Real clients talking to the gateway from the host: undici through a proxy
 * (the way pi does it), curl, and raw sockets for malformed input.
 */
import { execFile } from "node:child_process";
import { connect, type Socket } from "node:net";
import { promisify } from "node:util";
import { ProxyAgent, request } from "undici";

const exec = promisify(execFile);

export interface ClientResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request through the proxy with undici's ProxyAgent (CONNECT for every scheme, like pi). */
export async function viaProxy(
  proxy: string,
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    ca?: string;
  } = {},
): Promise<ClientResponse> {
  const agent = new ProxyAgent({
    uri: proxy,
    proxyTunnel: true,
    ...(options.ca ? { requestTls: { ca: options.ca } } : {}),
  });
  try {
    const response = await request(url, {
      dispatcher: agent,
      method: (options.method ?? "GET") as "GET",
      ...(options.headers ? { headers: options.headers } : {}),
      ...(options.body !== undefined ? { body: options.body } : {}),
    });
    return {
      status: response.statusCode,
      headers: response.headers,
      body: await response.body.text(),
    };
  } finally {
    await agent.close();
  }
}

/** curl through the proxy: -w prints the status on the last line. */
export async function curl(
  args: string[],
): Promise<{ status: number; body: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec("curl", ["-sS", "-w", "\n%{http_code}", ...args], {
      timeout: 30_000,
    });
    const at = stdout.lastIndexOf("\n");
    return { status: Number(stdout.slice(at + 1)), body: stdout.slice(0, at), stderr };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    const stdout = failed.stdout ?? "";
    const at = stdout.lastIndexOf("\n");
    return {
      status: Number(stdout.slice(at + 1)) || 0,
      body: stdout.slice(0, at),
      stderr: failed.stderr ?? "",
    };
  }
}

/** Sends raw bytes to the proxy and collects whatever comes back until it closes (or timeout). */
export async function rawExchange(
  port: number,
  chunks: Array<string | Buffer>,
  timeoutMs = 5000,
): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, "127.0.0.1");
    const received: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text: Buffer.concat(received).toString("latin1"), closed: false });
    }, timeoutMs);
    socket.on("connect", async () => {
      for (const chunk of chunks) {
        socket.write(chunk);
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    socket.on("data", (chunk) => received.push(chunk));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(received).toString("latin1"), closed: true });
    });
  });
}
