import { spawn } from "node:child_process";

/**
 * A box sending many large uploads at once, in a process of its own (so the
 * test's own process stays free to measure the others): it starts an upstream
 * that reads and drops what it gets, sends `count` uploads of `bytes` through
 * the gateway to `host` on that upstream, writing each until its answer comes,
 * and prints every answer as JSON.
 */
export interface BurstAnswer {
  status: number;
  body: string;
}

const SCRIPT = `
const http = require("node:http");
const [gatewayPort, token, host, count, bytes] = JSON.parse(process.argv[1]);
const piece = Buffer.alloc(1024 * 1024, 0x20);
const upstream = http.createServer((req, res) => {
  let got = 0;
  req.on("data", (chunk) => { got += chunk.length; });
  req.on("end", () => res.end(JSON.stringify({ bytes: got })));
});
function send(port) {
  return new Promise((resolve) => {
    let answered = false;
    const ask = http.request({
      host: "127.0.0.1", port: gatewayPort, method: "POST", agent: false,
      path: "http://" + host + ":" + port + "/v1/messages",
      headers: {
        host: host + ":" + port,
        "proxy-authorization": "Basic " + Buffer.from(token + ":x").toString("base64"),
        "content-type": "application/json",
        "content-length": bytes,
      },
    }, (response) => {
      answered = true;
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("end", () => { resolve({ status: response.statusCode, body: Buffer.concat(chunks).toString() }); ask.destroy(); });
    });
    ask.on("error", (error) => { if (!answered) resolve({ status: 0, body: String(error.code || error.message) }); });
    (async () => {
      for (let sent = 0; sent < bytes && !answered && !ask.destroyed; sent += piece.length) {
        if (!ask.write(piece.subarray(0, Math.min(piece.length, bytes - sent)))) {
          await new Promise((drained) => { ask.once("drain", drained); ask.once("close", drained); });
        }
      }
      if (!ask.destroyed) ask.end();
    })();
  });
}
upstream.listen(0, "127.0.0.1", async () => {
  const { port } = upstream.address();
  const answers = await Promise.all(Array.from({ length: count }, () => send(port)));
  process.stdout.write(JSON.stringify(answers) + "\\n");
  process.exit(0);
});
`;

export function uploadBurst(options: {
  gatewayPort: number;
  token: string;
  host: string;
  count: number;
  bytes: number;
}): Promise<BurstAnswer[]> {
  const args = [options.gatewayPort, options.token, options.host, options.count, options.bytes];
  const child = spawn(process.execPath, ["-e", SCRIPT, JSON.stringify(args)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.once("exit", (code) => {
      try {
        resolve(JSON.parse(out) as BurstAnswer[]);
      } catch {
        reject(new Error(`the upload burst exited (${code}) without its answers`));
      }
    });
  });
}
