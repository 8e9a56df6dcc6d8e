import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SENTINEL } from "../../runner/boundary/box/box-env.ts";
import { BOX_IMAGE, LABELS } from "../../runner/boundary/box/layout.ts";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { runRoster } from "../support/cli.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { latestRecord, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * No secret in any box: a run with every kind of credential in play (the
 * model's key injected on model calls, an API key injected by a grant, the
 * same key exposed to the box as an environment variable) uses both for
 * real, and yet no vault value appears in what the box saw, in the run's
 * record, transcript or any file of the state root, in the box image (its
 * config, history and every layer's bytes), or in the decision log (which
 * names the injected headers, never their values).
 *
 * The image is built here, by `roster box build`, while the secrets are all
 * around it: in the deployment's vault, in the building process's environment
 * (the model key as ANTHROPIC_API_KEY, as a user exports it before the first
 * run), and in files beside the sources it bakes (node_modules in the
 * extensions folder, which the build leaves out). An image built before the
 * secrets existed could not hold them, so looking in one would prove nothing.
 */
const docker = await testDocker();
const secret = (name: string) => `${name}-${randomBytes(12).toString("hex")}`;
const MODEL_KEY = secret("MODEL-KEY");
const API_KEY = secret("API-KEY");
const SECRETS = [MODEL_KEY, API_KEY];
const TAG = `roster-box:test-no-secret-${randomBytes(4).toString("hex")}`;

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/**
 * Which of `needles` occur in a byte stream, read to its end (a needle split
 * across two chunks is found too); the stream's error, if it breaks, is thrown.
 */
async function scanStream(
  stream: NodeJS.ReadableStream,
  needles: string[],
): Promise<{ bytes: number; found: string[] }> {
  const wanted = needles.map((needle) => Buffer.from(needle));
  const overlap = Math.max(...wanted.map((needle) => needle.length)) - 1;
  const found = new Set<string>();
  let tail: Buffer = Buffer.alloc(0);
  let bytes = 0;
  for await (const chunk of stream) {
    const data = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    bytes += data.length;
    // the chunk itself, and the seam with the one before (copied: a few bytes, not the chunk)
    const seam = Buffer.concat([tail, data.subarray(0, overlap)]);
    wanted.forEach((needle, index) => {
      if (data.includes(needle) || seam.includes(needle)) found.add(needles[index] ?? "");
    });
    tail =
      data.length >= overlap
        ? data.subarray(data.length - overlap)
        : Buffer.concat([tail, data]).subarray(-overlap);
  }
  return { bytes, found: [...found] };
}

describe.skipIf(!docker)("no secret in any box", () => {
  const client = docker as NonNullable<typeof docker>;
  let model: ModelServer;
  let deployment: RosterRoot;
  let upstream: Server;
  let work: string;
  /** The layers that were in the engine before any of the secrets existed. */
  let before: Set<string>;
  /** The deployment and its extensions folder, for the build and the run alike. */
  let env: NodeJS.ProcessEnv;
  const seen: string[] = [];

  beforeAll(async () => {
    const current = await client.getImage(BOX_IMAGE).inspect();
    before = new Set(current.RootFS.Layers ?? []);
    const base = current.Config.Labels?.[LABELS.baseImage];
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
      `${text
        .replace(/^port = (\d+)$/m, 'port = $1\nresolve = { "api.test" = "127.0.0.1" }')
        .replace(/^image = .*$/m, `image = "${TAG}"`)}
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

    // the extensions, with what a developer's folder holds beside them: installed packages
    // and a registry token among them (the build takes everything but node_modules)
    work = await mkdtemp(join(tmpdir(), "roster-no-secret-"));
    const extensions = join(work, "extensions");
    await cp(join(PROJECT_ROOT, "extensions"), extensions, { recursive: true });
    await mkdir(join(extensions, "node_modules/left-behind"), { recursive: true });
    await writeFile(
      join(extensions, "node_modules/.npmrc"),
      `//registry.npmjs.org/:_authToken=${API_KEY}\n`,
    );
    await writeFile(
      join(extensions, "node_modules/left-behind/.env"),
      `ANTHROPIC_API_KEY=${MODEL_KEY}\n`,
    );
    // built by hand on the base roster-box:latest was built on, as a user does, with the
    // model key in the environment and the vault holding both
    const started = Date.now();
    env = { ROSTER_ROOT: deployment.root, ROSTER_EXTENSIONS_DIR: extensions };
    const built = await runRoster(
      ["box", "build", "--tag", TAG, ...(base ? ["--base", base] : [])],
      { ...env, ANTHROPIC_API_KEY: MODEL_KEY, API_TOKEN: API_KEY },
      900_000,
    );
    expect(built.code, built.stderr).toBe(0);
    for (const each of SECRETS) expect(built.stdout + built.stderr).not.toContain(each);
    console.log(`built ${TAG} among the secrets in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  }, 900_000);
  afterAll(async () => {
    await model?.stop();
    upstream?.close();
    await deployment?.cleanup();
    await client
      .getImage(TAG)
      .remove({ force: true })
      .catch(() => undefined);
    if (work) await rm(work, { recursive: true, force: true });
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
    const result = await runRoster(["run", "elf", "look around"], env);
    expect(result.code, result.stderr).toBe(0);

    // the credentials were used: the model got its key, the API its own
    expect(String(model.requests[0]?.headers.authorization)).toContain(MODEL_KEY);
    expect(seen).toEqual([API_KEY]);
    // what the box saw (the tool's output, sent back to the model): placeholders only
    const toolOutput = JSON.stringify(model.requests[1]?.body.messages ?? []);
    expect(toolOutput).toContain(`API_TOKEN=${SENTINEL}`);
    expect(toolOutput).toContain("fine");
    for (const secret of SECRETS) expect(toolOutput).not.toContain(secret);

    // nothing in the state root: the run's record, its transcript, prompts and logs
    const record = latestRecord(deployment.paths, "elf");
    expect(record?.state).toBe("done");
    const files = filesUnder(deployment.paths.state);
    expect(files.some((file) => file.endsWith("events.jsonl"))).toBe(true);
    for (const file of files) {
      if (statSync(file).size > 64 * 1024 * 1024) continue;
      const content = readFileSync(file, "utf8");
      for (const secret of SECRETS)
        expect(content.includes(secret), `${secret} in ${file}`).toBe(false);
    }

    // the decision log names what was injected, never the value
    const audit = readFileSync(join(deployment.paths.audit, "decisions.jsonl"), "utf8");
    for (const secret of SECRETS) expect(audit).not.toContain(secret);
    const injected = audit
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { request?: { host: string }; injected?: string[] })
      .filter((line) => line.request?.host === "api.test");
    expect(injected).toEqual([expect.objectContaining({ injected: ["x-api-key"] })]);

    // the run started the image built among the secrets, as it was
    expect(result.stderr).not.toContain("rebuilding");

    // and the image carries none: not in its config, labels or history
    const image = await client.getImage(TAG).inspect();
    const history = await client.getImage(TAG).history();
    const described = JSON.stringify([image, history]);
    for (const secret of SECRETS) expect(described).not.toContain(secret);
    // nor in any layer's bytes. A layer is named by the hash of its bytes (its diff id), so one
    // the engine held before the secrets existed can't hold them: only the layers that are new
    // since need reading, and the whole image is exported only when there are some
    const layers = image.RootFS.Layers ?? [];
    expect(layers.length).toBeGreaterThan(0);
    const fresh = layers.filter((layer) => !before.has(layer));
    if (fresh.length === 0) {
      console.log(`all ${layers.length} layers of ${TAG} predate its secrets: none to read`);
    } else {
      // the engine exports whole images only: all of it, checked to the end
      const started = Date.now();
      const scan = await scanStream(await client.getImage(TAG).get(), SECRETS);
      console.log(
        `${fresh.length} of ${layers.length} layers of ${TAG} are new: read the whole image (${(scan.bytes / 1e9).toFixed(2)} GB) in ${((Date.now() - started) / 1000).toFixed(1)}s`,
      );
      expect(scan.bytes).toBeGreaterThan(0);
      expect(scan.found).toEqual([]);
    }
  });
});
