import { randomBytes } from "node:crypto";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ensureCurrentImage } from "../../runner/boundary/box/current-image.ts";
import { LABELS } from "../../runner/boundary/box/layout.ts";
import { silentProgress } from "../../runner/boundary/box/progress.ts";
import { sourceHash } from "../../runner/boundary/box/source-hash.ts";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
import { runRoster } from "../support/cli.ts";
import { testDocker, testEngine } from "../support/docker.ts";
import { ModelServer, type ScriptStep, textOf } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * The box image follows the extensions: a deployment whose image is roster's
 * own, built from a copy of extensions/ (ROSTER_EXTENSIONS_DIR, so the
 * project's own folder is never touched) under a tag of its own (so the
 * roster-box:latest every other suite uses is never rebuilt here).
 */
const docker = await testDocker();
const engine = (await testEngine()) as NonNullable<Awaited<ReturnType<typeof testEngine>>>;
const FIXTURE = join(PROJECT_ROOT, "test/fixtures/extensions/echo_upper.ts");

/** The dropped-in tool, and (in the same turn) a look at what the image holds beside it. */
const callEchoUpper: ScriptStep = {
  toolCalls: [
    { name: "echo_upper", arguments: { text: "drop in" } },
    { name: "bash", arguments: { command: "ls /opt/roster/engine/extensions/lib" } },
  ],
};
const answerWithToolOutput: ScriptStep = (request) => {
  const outputs = (request.body.messages ?? [])
    .filter((message) => message.role === "tool")
    .map((message) => textOf(message.content));
  return { text: `TOOL OUTPUT:\n${outputs.join("\n")}` };
};

describe.skipIf(!docker)("an image that follows the extensions", () => {
  const client = docker as NonNullable<typeof docker>;
  const tag = `roster-box:test-follow-${randomBytes(4).toString("hex")}`;
  let model: ModelServer;
  let deployment: RosterRoot;
  let work: string;
  let extensions: string;
  let env: NodeJS.ProcessEnv;
  const roster = (args: string[]) => runRoster(args, env, 600_000);

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "MODEL-KEY" });
    const org = join(deployment.paths.config, "org.toml");
    await writeFile(
      org,
      (await readFile(org, "utf8")).replace(/^image = .*$/m, `image = "${tag}"`),
    );
    work = await mkdtemp(join(tmpdir(), "roster-follow-"));
    extensions = join(work, "extensions");
    await cp(join(PROJECT_ROOT, "extensions"), extensions, { recursive: true });
    env = { ROSTER_ROOT: deployment.root, ROSTER_EXTENSIONS_DIR: extensions };
    // made once by hand, as a user does; everything after is the runs' doing
    const handStarted = Date.now();
    const built = await roster(["box", "build", "--tag", tag, "--json"]);
    expect(built.code, built.stderr).toBe(0);
    // on a machine whose layer cache holds roster-box:latest this takes seconds: when it
    // does not, the steps that ran say which layer missed
    const handSecs = (Date.now() - handStarted) / 1000;
    console.log(`the hand build of ${tag}: ${handSecs.toFixed(1)}s`);
    if (handSecs > 60) console.log(built.stderr.split("\n").slice(0, 60).join("\n"));
  }, 900_000);
  beforeEach(() => model.reset());
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
    await client
      .getImage(tag)
      .remove({ force: true })
      .catch(() => undefined);
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("starts a current image as it is, without building", async () => {
    const before = await engine.image(tag);
    model.play({ text: "nothing new" });
    const run = await roster(["run", "--local", "elf", "anything new?"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe("nothing new");
    expect(run.stderr).not.toContain("rebuilding");
    expect((await engine.image(tag))?.id).toBe(before?.id);
  });

  it("rebuilds at the next run when a tool is dropped in, and the model calls it", async () => {
    await cp(FIXTURE, join(extensions, "echo_upper.ts"));
    // a helper beside it in lib/: baked into the image, never loaded as an extension of its own
    await writeFile(join(extensions, "lib", "shared-note.ts"), "export const note = 1;\n");
    // the doctor sees it too, before any run
    const stale = await roster(["box", "doctor", "--image", tag]);
    expect(stale.stdout).toMatch(
      /--\s+sources\s+extensions\/, box\/ or engine\/ changed since it was built/,
    );
    const replaced = (await engine.image(tag))?.id;
    expect(replaced).toBeDefined();
    model.play(callEchoUpper, answerWithToolOutput);
    const started = Date.now();
    const run = await roster(["run", "--local", "elf", "shout 'drop in'"]);
    expect(run.code, run.stderr).toBe(0);
    // why, and the build's steps as they happen, on stderr
    expect(run.stderr).toContain(
      "extensions/, box/ or engine/ changed since the box image was built; rebuilding it",
    );
    expect(run.stderr).toMatch(/image: Step \d+\/\d+ : COPY extensions\//);
    expect(run.stderr).toMatch(new RegExp(`rebuilt ${tag} in \\d+\\.\\ds`));
    // the image it replaced is not left on the host's disk, named by nothing
    expect(run.stderr).toContain(`image: removed the ${tag} it replaced`);
    expect(await engine.image(replaced ?? "")).toBeUndefined();
    expect(run.stdout).toContain("ECHO:DROP IN");
    // the box the run started from the rebuilt image has lib/ with the new helper in it
    expect(run.stdout).toMatch(/^shared-note\.ts$/m);
    const labels = (await engine.image(tag))?.labels ?? {};
    expect(labels[LABELS.extensions]?.split(",")).toContain("echo_upper.ts");
    // lib/ is imported by extensions, never loaded on its own
    expect(labels[LABELS.extensions]?.split(",")).not.toContain("shared-note.ts");
    expect(labels[LABELS.source]).toBe(await sourceHash({ extensionsDir: extensions }));
    const doctor = await roster(["box", "doctor", "--image", tag, "--json"]);
    expect(JSON.parse(doctor.stdout)).toMatchObject({ image: { name: tag, current: true } });
    console.log(`drop-in run with its rebuild: ${((Date.now() - started) / 1000).toFixed(1)}s`);
  });

  it("builds once when two runs find it stale at once", async () => {
    await writeFile(join(extensions, "lib", "note.ts"), "export const note = 2;\n");
    const notes: string[][] = [[], []];
    const ids = await Promise.all(
      notes.map((said) =>
        ensureCurrentImage({
          engine,
          image: tag,
          extensionsDir: extensions,
          note: (text) => said.push(text),
          progress: silentProgress,
        }),
      ),
    );
    expect(ids[0]).toBe(ids[1]);
    const all = notes.flat();
    expect(all.filter((line) => line.endsWith("rebuilding it"))).toHaveLength(1);
    expect(all.filter((line) => line.startsWith("waiting for process"))).toHaveLength(1);
  });

  it("[engine] dir runs a checkout's extensions without a build, warning on every run", async () => {
    const checkout = join(work, "checkout");
    await mkdir(join(checkout, "engine"), { recursive: true });
    await cp(join(PROJECT_ROOT, "engine/run-pi"), join(checkout, "engine/run-pi"));
    await cp(join(PROJECT_ROOT, "extensions"), join(checkout, "extensions"), { recursive: true });
    // a tool the image does not have: only the mount can bring it
    const shout = (await readFile(FIXTURE, "utf8"))
      .replace('name: "echo_upper"', 'name: "echo_checkout"')
      .replace("ECHO:", "CHECKOUT:");
    await writeFile(join(checkout, "extensions", "echo_checkout.ts"), shout);
    const org = join(deployment.paths.config, "org.toml");
    const text = await readFile(org, "utf8");
    await writeFile(org, text.replace(/^\[engine\]$/m, `[engine]\ndir = "${checkout}"`));
    try {
      const before = await engine.image(tag);
      for (let i = 0; i < 2; i++) {
        model.reset();
        model.play(
          { toolCalls: [{ name: "echo_checkout", arguments: { text: `run ${i}` } }] },
          answerWithToolOutput,
        );
        const run = await roster(["run", "--local", "elf", "use the checkout"]);
        expect(run.code, run.stderr).toBe(0);
        expect(run.stdout).toContain(`CHECKOUT:RUN ${i}`);
        expect(run.stderr).toContain(
          `warning: [engine] dir is on: every box runs the extensions and run-pi of ${checkout}`,
        );
        expect(run.stderr).not.toContain("rebuilding");
      }
      expect((await engine.image(tag))?.id).toBe(before?.id);
    } finally {
      await writeFile(org, text);
    }
  });
});
