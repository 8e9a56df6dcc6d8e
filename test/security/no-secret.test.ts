import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SENTINEL } from "../../runner/box/box-env.ts";
import { BOX_IMAGE } from "../../runner/box/layout.ts";
import { storeCredential } from "../../runner/runs/credentials.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { latestRecord, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * No secret in any box: a run with every kind of credential in play (the
 * model's key injected on model calls, an API key injected by a grant, the
 * same key exposed to the box as an environment variable) uses both for
 * real, and yet no vault value appears in what the box saw, in the run's
 * record, transcript or any file of the state root, in the image (its config,
 * history and every layer's bytes), or in the
 * decision log (which names the injected headers, never their values).
 */
const docker = await testDocker();
const MARK = Math.random().toString(36).slice(2, 10);
const MODEL_KEY = `MODEL-KEY-${MARK}`;
const API_KEY = `API-KEY-${MARK}`;

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

describe.skipIf(!docker)("no secret in any box", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let upstream: Server;
  const seen: string[] = [];

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      seen.push(String(req.headers["x-api-key"] ?? ""));
      res.end("fine");
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: MODEL_KEY });
    const org = join(deployment.paths.config, "org.toml");
    const text = await readFile(org, "utf8");
    await writeFile(
      org,
      `${text.replace(/^port = (\d+)$/m, 'port = $1\nresolve = { "api.test" = "127.0.0.1" }')}
[[grant]]
name = "api"
verdict = "allow"
match = { host = "api.test" }
inject = { credential = "api", headers = [{ header = "x-api-key", value = "{token}" }] }

[[expose]]
credential = "api"
env = "API_TOKEN"
`,
    );
    await storeCredential(deployment.paths.vault, "api", { token: API_KEY });
  });
  afterAll(async () => {
    await model?.stop();
    upstream?.close();
    await deployment?.cleanup();
  });

  it("uses every credential for real, and no value reaches the box, the records or the image", {
    timeout: 300_000,
  }, async () => {
    const port = (upstream.address() as AddressInfo).port;
    const probe: ScriptStep = {
      toolCalls: [
        {
          name: "bash",
          arguments: {
            command: `env | sort; cat ~/agent/*.json; curl -s -H "x-api-key: $API_TOKEN" http://api.test:${port}/; echo`,
          },
        },
      ],
    };
    model.play(probe, { text: "looked around" });
    const result = await deployment.roster(["run", "elf", "look around"]);
    expect(result.code, result.stderr).toBe(0);

    // the credentials were used: the model got its key, the API its own
    expect(String(model.requests[0]?.headers.authorization)).toContain(MODEL_KEY);
    expect(seen).toEqual([API_KEY]);
    // what the box saw (the tool's output, sent back to the model): placeholders only
    const toolOutput = JSON.stringify(model.requests[1]?.body.messages ?? []);
    expect(toolOutput).toContain(`API_TOKEN=${SENTINEL}`);
    expect(toolOutput).toContain("fine");
    for (const secret of [MODEL_KEY, API_KEY]) expect(toolOutput).not.toContain(secret);

    // nothing in the state root: the run's record, its transcript, prompts and logs
    const record = latestRecord(deployment.paths, "elf");
    expect(record?.state).toBe("done");
    const files = filesUnder(deployment.paths.state);
    expect(files.some((file) => file.endsWith("events.jsonl"))).toBe(true);
    for (const file of files) {
      if (statSync(file).size > 64 * 1024 * 1024) continue;
      const content = readFileSync(file, "utf8");
      for (const secret of [MODEL_KEY, API_KEY])
        expect(content.includes(secret), `${secret} in ${file}`).toBe(false);
    }

    // the decision log names what was injected, never the value
    const audit = readFileSync(join(deployment.paths.audit, "decisions.jsonl"), "utf8");
    for (const secret of [MODEL_KEY, API_KEY]) expect(audit).not.toContain(secret);
    const injected = audit
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { request?: { host: string }; injected?: string[] })
      .filter((line) => line.request?.host === "api.test");
    expect(injected).toEqual([expect.objectContaining({ injected: ["x-api-key"] })]);

    // and the image carries none in its environment, labels or history
    const client = docker as NonNullable<typeof docker>;
    const image = await client.getImage(BOX_IMAGE).inspect();
    const history = await client.getImage(BOX_IMAGE).history();
    const described = JSON.stringify([image.Config, history]);
    for (const secret of [MODEL_KEY, API_KEY]) expect(described).not.toContain(secret);
    // nor in any layer's files: the whole image, streamed through grep
    const found = execFileSync(
      "sh",
      ["-c", `docker save ${BOX_IMAGE} | grep -a -c -F -e '${MODEL_KEY}' -e '${API_KEY}' || true`],
      { encoding: "utf8", maxBuffer: 1 << 20 },
    ).trim();
    expect(found).toBe("0");
  });
});
