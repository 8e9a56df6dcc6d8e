import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { askHealth } from "../../runner/boundary/gateway/process/health.ts";

/**
 * The /healthz question a run asks a standalone gateway every two seconds:
 * whatever the peer does (stalls, hangs up, sends garbage or too much), the
 * answer is "not healthy" within the timeout and no socket is left open.
 */
let server: Server | undefined;
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  const open = server;
  server = undefined;
  if (open) await new Promise((resolve) => open.close(resolve));
});

async function peer(onConnection: (socket: Socket) => void): Promise<number> {
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return typeof address === "object" && address ? address.port : 0;
}

const answer = (body: string) =>
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

describe("askHealth against hostile peers", () => {
  it("says healthy only for a 200 with ok: true", async () => {
    const port = await peer((socket) =>
      socket.once("data", () => socket.end(answer('{"ok":true,"config_root":"/c"}'))),
    );
    expect(await askHealth(port, 1_000)).toEqual({ ok: true, config_root: "/c" });
  });

  it.each([
    ["stalls after the request", (_socket: Socket) => undefined],
    ["stalls mid-headers", (socket: Socket) => socket.write("HTTP/1.1 200 OK\r\ncontent-le")],
    [
      "stalls mid-body",
      (socket: Socket) => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"ok":'),
    ],
    ["hangs up at once", (socket: Socket) => socket.destroy()],
    ["sends garbage", (socket: Socket) => socket.end("\u0000\u0001 not http at all\r\n\r\n")],
    ["answers 200 with a body that is not JSON", (socket: Socket) => socket.end(answer("<html>"))],
    ["answers ok: false", (socket: Socket) => socket.end(answer('{"ok":false}'))],
    [
      "sends an endless body",
      (socket: Socket) => {
        socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
        const chunk = `${(64 * 1024).toString(16)}\r\n${"x".repeat(64 * 1024)}\r\n`;
        const pump = () => {
          while (!socket.destroyed && socket.write(chunk));
          if (!socket.destroyed) socket.once("drain", pump);
        };
        pump();
      },
    ],
  ])("is not healthy when the peer %s, within the timeout, leaving no socket", async (_, act) => {
    const port = await peer((socket) => socket.once("data", () => act(socket)));
    const started = Date.now();
    expect(await askHealth(port, 500)).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(3_000);
    // the client closed its side: every connection the peer saw ends
    await new Promise((resolve) => setTimeout(resolve, 100));
    const open = await new Promise<number>((resolve) =>
      server?.getConnections((_e, n) => resolve(n)),
    );
    expect(open).toBe(0);
  });

  it("is not healthy when nothing listens", async () => {
    const port = await peer(() => undefined);
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
    expect(await askHealth(port, 500)).toBeUndefined();
  });
});
