import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOX_IMAGE } from "../../runner/boundary/box/layout.ts";
import { startContainer } from "../../runner/boundary/box/lifecycle.ts";
import { engineRuntime } from "../../runner/boundary/box/runtime-check.ts";
import { DAEMON_JSON, findRunsc, setUpRunsc } from "../../runner/boundary/box/runtime-setup.ts";
import type { ExecEnvelope } from "../../runner/work/runs/exec-envelope.ts";
import { isCI, testDocker, testEngine } from "../support/docker.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * gVisor: `[box] runtime = "runsc"` puts a user-space kernel between a box and
 * the host's, with the real engine and Debian's runsc. `roster box doctor
 * --fix` registers it (with the flags the door needs) and reloads dockerd; a
 * box under it sees gVisor's kernel and still reaches the gateway through the
 * door; a runtime the engine does not list is refused before any container
 * exists (a worker may not drop what org.toml requires: that is config, in
 * test/unit/runtime-narrows.test.ts). Without runsc the
 * suite fails in CI (it must not pass by not running) and skips, saying why,
 * elsewhere.
 */
const docker = await testDocker();
const boxEngine = await testEngine();
const runsc = await findRunsc();
if (docker && !runsc && !isCI)
  console.warn("skipping gVisor tests: runsc is not installed (apt-get install runsc)");

/** The engine, inside the suite that runs only with one. */
function engine() {
  if (!boxEngine) throw new Error("no container engine");
  return boxEngine;
}

/** The engine's API client, for looking at what roster made. */
function client() {
  if (!docker) throw new Error("no container engine");
  return docker;
}

describe.skipIf(!docker || (!runsc && !isCI))("gVisor (runsc) boxes", () => {
  let deployment: RosterRoot;
  let scratch: string;

  beforeAll(async () => {
    if (!runsc)
      throw new Error(
        "runsc is not installed: CI installs it in box/with-docker.sh (apt-get install runsc)",
      );
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1", { runtime: "runsc" });
    scratch = await mkdtemp(join(tmpdir(), "roster-gvisor-"));
  });
  afterAll(async () => {
    await deployment?.cleanup();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it("doctor --fix registers runsc with the door's flags; a second --fix changes nothing", async () => {
    const first = await deployment.roster(["box", "doctor", "--fix"], { timeoutMs: 60_000 });
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^fixed {4}/m);
    const listed = await engineRuntime(engine(), "runsc");
    expect(listed).toMatchObject({ registered: true, missingArgs: [] });
    expect(listed.runtimeArgs).toEqual(
      expect.arrayContaining(["--host-uds=open", "--network=none"]),
    );
    const file = await readFile(DAEMON_JSON, "utf8");

    const again = await deployment.roster(["box", "doctor", "--fix"], { timeoutMs: 60_000 });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain("nothing needed changing");
    expect(await readFile(DAEMON_JSON, "utf8")).toBe(file);
    // the root's org.toml asks for runsc, and doctor says every box gets it
    expect(again.stdout).toMatch(
      /^ok {2}runtime {2}runsc \(gVisor\) for every worker's box: registered/m,
    );
  });

  it("a box exec under runsc sees gVisor's kernel and reaches the gateway through the door", async () => {
    const result = await deployment.roster(
      [
        "box",
        "exec",
        "elf",
        "--local",
        "--",
        "dmesg | head -n 1; curl -s -o /dev/null -w 'door=%{http_code}\\n' --max-time 10 http://example.test/",
      ],
      { timeoutMs: 120_000 },
    );
    expect(result.code, result.stderr).toBe(0);
    const envelope = JSON.parse(result.stdout.trim()) as ExecEnvelope;
    expect(envelope.stdout).toMatch(/Starting gVisor/);
    // the gateway judged the request (no grant for example.test): the door is open
    expect(envelope.stdout).toContain("door=403\n");
  });

  it("a box of 200 processes under runsc does real work: its limit leaves room for gVisor's own threads", async () => {
    await writeFile(
      join(deployment.paths.config, "workers/elf/worker.toml"),
      'name = "elf"\n\n[box]\npids_limit = 200\n',
    );
    try {
      const result = await deployment.roster(
        [
          "box",
          "exec",
          "elf",
          "--local",
          "--",
          "for i in $(seq 1 12); do (curl -s -o /dev/null --max-time 5 http://example.test/ | cat) & done; wait; echo done",
        ],
        { timeoutMs: 120_000 },
      );
      const envelope = JSON.parse(result.stdout.trim()) as ExecEnvelope;
      expect(envelope, result.stderr).toMatchObject({
        status: "ok",
        exit_code: 0,
        stdout: "done\n",
      });
    } finally {
      await writeFile(join(deployment.paths.config, "workers/elf/worker.toml"), 'name = "elf"\n');
    }
  });

  it("refuses a runtime the engine does not list before any container exists", async () => {
    const mark = Math.random().toString(36).slice(2, 10);
    const name = `roster-gvisor-absent-${mark}`;
    await expect(
      startContainer(engine(), {
        image: BOX_IMAGE,
        cmd: ["true"],
        name,
        runtime: `absent-${mark}`,
      }),
    ).rejects.toThrow(
      new RegExp(
        `"absent-${mark}".*not registered.*never falls back to runc.*roster box doctor --fix`,
      ),
    );
    const found = await client().listContainers({ all: true, filters: { name: [name] } });
    expect(found).toEqual([]);
  });

  it("--fix merges into the engine's config keeping every other key, and refuses a broken one", async () => {
    const file = join(scratch, "daemon.json");
    await writeFile(
      file,
      JSON.stringify({ "log-level": "warn", runtimes: { other: { path: "/x" } } }),
    );
    const setup = await setUpRunsc(engine(), { daemonJson: file });
    expect(setup.changed).toBe(true);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({
      "log-level": "warn",
      runtimes: {
        other: { path: "/x" },
        runsc: { path: runsc, runtimeArgs: ["--host-uds=open", "--network=none"] },
      },
    });

    // refused, legibly, with nothing written: no runsc on PATH, or a file it can't write
    await expect(
      setUpRunsc(engine(), { daemonJson: file, env: { PATH: join(scratch, "empty") } }),
    ).rejects.toThrow(/runsc \(gVisor\) is not installed: `apt-get install runsc`/);
    await expect(setUpRunsc(engine(), { daemonJson: "/proc/roster-daemon.json" })).rejects.toThrow(
      /cannot write \/proc\/roster-daemon\.json .*nothing was changed/,
    );

    await writeFile(file, '{ "log-level": "warn", ');
    await expect(setUpRunsc(engine(), { daemonJson: file })).rejects.toThrow(
      /daemon\.json is not valid JSON .*nothing was changed/,
    );
    expect(await readFile(file, "utf8")).toBe('{ "log-level": "warn", ');
  });
});
