/**
 * What metering model usage costs the gateway: the same streamed 1 MB model
 * answer (a Chat Completions event stream, ~4 KB events, usage in the last
 * chunk) through roster's gateway, once on a metered path
 * (`POST /v1/chat/completions`) and once on a path the meter leaves alone
 * (`POST /v1/chat/stream`), side by side in one run: requests/s, p50, and the
 * gateway process's CPU per request. The gateway runs as its own process
 * (`roster gateway start`); 8 keep-alive clients through its proxy.
 *   npx tsx bench/usage-meter.ts
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ProxyAgent, request } from "undici";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { freePort } from "./harness.ts";
import { median } from "./timing.ts";

const CLIENTS = 8;
const REQUESTS = 200;
const ROUNDS = 3;

// one 1 MB stream: content deltas of ~4 KB, then the usage chunk and [DONE]
const delta = JSON.stringify({
  object: "chat.completion.chunk",
  model: "house-model",
  choices: [{ index: 0, delta: { content: "x".repeat(4000) }, finish_reason: null }],
});
const events: string[] = [];
let size = 0;
while (size < 1024 * 1024) {
  const event = `data: ${delta}\n\n`;
  events.push(event);
  size += event.length;
}
events.push(
  `data: ${JSON.stringify({ object: "chat.completion.chunk", model: "house-model", choices: [], usage: { prompt_tokens: 1000, completion_tokens: 250000, prompt_tokens_details: { cached_tokens: 0 } } })}\n\n`,
  "data: [DONE]\n\n",
);
const body = Buffer.from(events.join(""));

const upstream = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/event-stream", "content-length": body.length });
    res.end(body);
  });
});
upstream.keepAliveTimeout = 60_000;
await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
const upstreamPort = (upstream.address() as AddressInfo).port;

const work = await mkdtemp(join(tmpdir(), "roster-bench-usage-"));
const paths = rosterPaths({ ROSTER_ROOT: work });
await mkdir(paths.config, { recursive: true });
await writeFile(
  join(paths.config, "org.toml"),
  `[gateway]\nresolve = { "models.test" = "127.0.0.1" }\n\n[[grant]]\nname = "models"\nverdict = "allow"\nmatch = { host = "models.test" }\n`,
);
const gatewayPort = await freePort();
const gateway = spawn(
  process.execPath,
  [join(PROJECT_ROOT, "bin/roster.mjs"), "gateway", "start", "--addr", `127.0.0.1:${gatewayPort}`],
  { env: { ...process.env, ROSTER_ROOT: work }, stdio: "ignore" },
);
for (let i = 0; i < 100; i++) {
  try {
    await request(`http://127.0.0.1:${gatewayPort}/healthz`).then((r) => r.body.dump());
    break;
  } catch {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
const token = await mintToken(paths.identity, { subject: "org/bench", runId: "bench" });
const proxy = new ProxyAgent({
  uri: `http://${token}:x@127.0.0.1:${gatewayPort}`,
  proxyTunnel: true,
  connections: CLIENTS,
});

function cpuMs(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

async function drive(path: string) {
  const url = `http://models.test:${upstreamPort}${path}`;
  const latencies: number[] = [];
  const cpuBefore = cpuMs(gateway.pid);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < REQUESTS) {
        next++;
        const t = performance.now();
        const response = await request(url, {
          dispatcher: proxy,
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        });
        const bytes = (await response.body.arrayBuffer()).byteLength;
        if (response.statusCode !== 200 || bytes !== body.length)
          throw new Error(`${path}: ${response.statusCode}, ${bytes} bytes`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    rps: REQUESTS / seconds,
    p50: median(latencies),
    cpu: (cpuMs(gateway.pid) - cpuBefore) / REQUESTS,
  };
}

const results = {
  metered: [] as Array<Awaited<ReturnType<typeof drive>>>,
  plain: [] as Array<Awaited<ReturnType<typeof drive>>>,
};
try {
  await drive("/v1/chat/stream"); // warm both paths
  for (let round = 0; round < ROUNDS; round++) {
    results.plain.push(await drive("/v1/chat/stream"));
    results.metered.push(await drive("/v1/chat/completions"));
  }
} finally {
  await proxy.close();
  gateway.kill("SIGTERM");
  await new Promise((resolve) => gateway.once("exit", resolve));
  upstream.close();
  await rm(work, { recursive: true, force: true });
}

const mid = (list: Array<{ rps: number; p50: number; cpu: number }>) => ({
  rps: median(list.map((r) => r.rps)),
  p50: median(list.map((r) => r.p50)),
  cpu: median(list.map((r) => r.cpu)),
});
const plain = mid(results.plain);
const metered = mid(results.metered);
console.log(
  `Node ${process.version}; ${CLIENTS} clients × ${REQUESTS} requests of a ${(body.length / 1024).toFixed(0)} KB event stream, medians of ${ROUNDS} rounds\n`,
);
console.log("| path | req/s | p50 ms | gateway CPU ms/req | vs unmetered |");
console.log("| --- | --- | --- | --- | --- |");
console.log(
  `| not metered (/v1/chat/stream) | ${plain.rps.toFixed(0)} | ${plain.p50.toFixed(1)} | ${plain.cpu.toFixed(2)} | 1.00x |`,
);
console.log(
  `| metered (/v1/chat/completions) | ${metered.rps.toFixed(0)} | ${metered.p50.toFixed(1)} | ${metered.cpu.toFixed(2)} | ${(metered.rps / plain.rps).toFixed(2)}x req/s, +${(metered.p50 - plain.p50).toFixed(1)} ms p50 |`,
);
