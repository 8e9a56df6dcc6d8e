import { execFile } from "node:child_process";
import { open } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOOR_SOCKET } from "../../runner/boundary/box/layout.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * A client still uploading when the gateway refuses its body must read the
 * refusal: the gateway lingers, reading and dropping the rest for a bounded
 * while, instead of closing on it (which reset the client before it read a
 * byte). curl, as a worker would run it, uploads 100 MB against the 64 MB limit.
 */
const MiB = 1024 * 1024;
let env: GatewayEnv;
let upstream: Upstream;
let token: string;
let file: string;

beforeAll(async () => {
  upstream = await Upstream.start({ tls: false, handler: (_req, res) => void res.end("reached") });
  env = await startGatewayEnv(
    `
[gateway]
resolve = { "upload.test" = "127.0.0.1" }

[[grant]]
name = "upload"
verdict = "allow"
match = { host = "upload.test" }
`,
    { door: true },
  );
  token = await env.token("elf");
  // 100 MB of zeros without writing them: a sparse file reads back the same
  file = join(env.root, "upload.bin");
  const handle = await open(file, "w");
  await handle.truncate(100 * MiB);
  await handle.close();
});
afterAll(async () => {
  await env?.cleanup();
  await upstream?.stop();
});

function curlUpload(
  extra: string[],
): Promise<{ code: number; status: string; body: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      "curl",
      [
        "--silent",
        "--show-error",
        "--proxy",
        `http://${token}:x@127.0.0.1:${env.gateway.port}`,
        "--data-binary",
        `@${file}`,
        "--write-out",
        "\n%{http_code}",
        ...extra,
        `http://upload.test:${upstream.port}/upload`,
      ],
      { maxBuffer: 16 * MiB },
      (error, stdout, stderr) => {
        const at = stdout.lastIndexOf("\n");
        resolve({
          code: typeof error?.code === "number" ? error.code : 0,
          body: stdout.slice(0, at),
          status: stdout.slice(at + 1),
          stderr,
        });
      },
    );
  });
}

describe("a body refused while the client still uploads", () => {
  it("100 MB with a Content-Length: the client reads the 413 and its hint", async () => {
    const result = await curlUpload([]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.status).toBe("413");
    expect(JSON.parse(result.body)).toMatchObject({
      error: "request body too large",
      hint: `request bodies over ${64 * MiB} bytes are refused; send less per request`,
    });
    expect(upstream.seen.some((seen) => seen.url === "/upload")).toBe(false);
  });

  it("100 MB chunked: the client reads the 413 once the body crosses the limit", async () => {
    const result = await curlUpload(["--header", "Transfer-Encoding: chunked"]);
    expect(result.stderr).toBe("");
    expect(result.status).toBe("413");
    expect(JSON.parse(result.body)).toMatchObject({ error: "request body too large" });
    expect(upstream.seen.some((seen) => seen.url === "/upload")).toBe(false);
  });

  it("100 MB through the door, as a box's client sends it: it reads the 413, not a broken pipe", async () => {
    const door = join(env.gateway.door ?? "", DOOR_SOCKET);
    const piece = Buffer.alloc(MiB);
    const result = await new Promise<{ status: number; body: string } | Error>((resolve) => {
      let answered = false;
      const upload = request(
        {
          socketPath: door,
          method: "POST",
          path: `http://upload.test:${upstream.port}/upload`,
          headers: {
            host: `upload.test:${upstream.port}`,
            "proxy-authorization": `Basic ${Buffer.from(`${token}:x`).toString("base64")}`,
            "content-length": 100 * MiB,
          },
        },
        (response) => {
          answered = true;
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () =>
            resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
          );
        },
      );
      upload.on("error", (error) => {
        if (!answered) resolve(error);
      });
      // a client that writes its whole body before it looks for an answer
      void (async () => {
        for (let sent = 0; sent < 100 * MiB && !upload.destroyed; sent += MiB) {
          if (!upload.write(piece)) {
            await new Promise((drained) => {
              upload.once("drain", drained);
              upload.once("close", drained);
            });
          }
        }
        if (!upload.destroyed) upload.end();
      })();
    });
    expect(result).not.toBeInstanceOf(Error);
    expect(result).toMatchObject({ status: 413 });
    expect(JSON.parse((result as { body: string }).body)).toMatchObject({
      error: "request body too large",
    });
  });
});
