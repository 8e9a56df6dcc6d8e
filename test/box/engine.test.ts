import { chmod, cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
import { configureModel, makeHome, type TestHome } from "../support/box-home.ts";
import { testDocker, testEngine } from "../support/docker.ts";
import { relayDoor } from "../support/door-relay.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { piEvents, runInBox, runPiArgs } from "../support/pi-box.ts";

const docker = await testDocker();
const engine = (await testEngine()) as NonNullable<Awaited<ReturnType<typeof testEngine>>>;
const fixtures = join(PROJECT_ROOT, "test/fixtures/extensions");

/** A copy of the project's extensions/ plus the named fixture files: a drop-in, as a user does it. */
async function extensionsWith(...fixtureNames: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "roster-ext-"));
  await cp(join(PROJECT_ROOT, "extensions"), dir, { recursive: true });
  for (const name of fixtureNames) await cp(join(fixtures, name), join(dir, name));
  await chmod(dir, 0o755);
  return dir;
}

describe.skipIf(!docker)("the engine in a hardened box", () => {
  let home: TestHome;
  /** This test's door: a relay to its scripted model (engine tests need no gateway). */
  let door: string | undefined;
  const cleanups: Array<() => Promise<void>> = [];

  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  async function freshHome(): Promise<TestHome> {
    home = await makeHome();
    cleanups.push(home.cleanup);
    return home;
  }

  async function scriptedModel(...turns: ScriptStep[]) {
    const model = await new ModelServer(turns).start();
    cleanups.push(() => model.stop());
    const relay = await relayDoor(model.port);
    cleanups.push(() => relay.close());
    door = relay.dir;
    await configureModel(home.dir, `${relay.origin}/v1`);
    return model;
  }

  it("runs run-pi --version as a non-root user on a read-only root with no capabilities", async () => {
    await freshHome();
    const run = await runInBox(engine, ["/opt/roster/engine/run-pi", "--version"], {
      home: home.dir,
    });
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    expect(run.stdout.trim()).toBe("1.6.0");

    const probe = await runInBox(
      engine,
      [
        "bash",
        "-c",
        "id -un; grep CapEff /proc/self/status; touch /var/tmp/x 2>&1; touch /opt/roster/engine/x 2>&1 || echo engine-ro; touch /tmp/ok && echo tmp-rw; echo $PI_CODING_AGENT_DIR",
      ],
      { home: home.dir },
    );
    expect(probe.exitCode).toBe(0);
    expect(probe.stdout).toContain("worker\n");
    expect(probe.stdout).toMatch(/CapEff:\s+0000000000000000/);
    expect(probe.stdout).toMatch(/var\/tmp\/x.*Read-only file system/);
    expect(probe.stdout).toContain("engine-ro");
    expect(probe.stdout).toContain("tmp-rw");
    expect(probe.stdout).toContain("/home/worker/agent");
  });

  it("loads a dropped-in extension, lists its tool to the model and calls it", async () => {
    await freshHome();
    const extensions = await extensionsWith("echo_upper.ts");
    cleanups.push(() => rm(extensions, { recursive: true, force: true }));
    const model = await scriptedModel(
      { toolCalls: [{ name: "echo_upper", arguments: { text: "drop in" } }] },
      (request) => {
        const result = request.body.messages?.find((message) => message.role === "tool");
        return { text: `the tool said ${JSON.stringify(result?.content)}` };
      },
    );

    const run = await runInBox(engine, runPiArgs("shout 'drop in'"), {
      home: home.dir,
      extensionsDir: extensions,
      ...(door ? { door } : {}),
    });
    expect(run.exitCode, run.stderr).toBe(0);

    const offered = model.requests[0]?.body.tools?.map((tool) => tool.function.name) ?? [];
    expect(offered).toContain("echo_upper");

    const events = piEvents(run.stdout);
    const started = events.find((event) => event.type === "tool_execution_start");
    const ended = events.find((event) => event.type === "tool_execution_end");
    expect(started).toMatchObject({ toolName: "echo_upper", args: { text: "drop in" } });
    expect(ended).toMatchObject({
      toolName: "echo_upper",
      isError: false,
      result: { content: [{ type: "text", text: "ECHO:DROP IN" }] },
    });
    expect(model.toolResults()).toEqual([expect.objectContaining({ content: "ECHO:DROP IN" })]);
    const finalTexts = events
      .filter((event) => event.type === "message_end")
      .map((event) => JSON.stringify(event.message));
    expect(finalTexts.at(-1)).toContain("the tool said");
    expect(events.at(-1)?.type).toBe("agent_settled");
  });

  it("reports a throwing tool as a tool error and lets the run go on", async () => {
    await freshHome();
    const extensions = await extensionsWith("echo_upper.ts", "always_throws.ts");
    cleanups.push(() => rm(extensions, { recursive: true, force: true }));
    const model = await scriptedModel(
      {
        toolCalls: [
          { name: "always_throws", arguments: {} },
          { name: "echo_upper", arguments: { text: "still here" } },
        ],
      },
      { text: "recovered" },
    );

    const run = await runInBox(engine, runPiArgs("try both"), {
      home: home.dir,
      extensionsDir: extensions,
      ...(door ? { door } : {}),
    });
    expect(run.exitCode, run.stderr).toBe(0);
    const ends = piEvents(run.stdout).filter((event) => event.type === "tool_execution_end");
    expect(ends).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ toolName: "always_throws", isError: true }),
        expect.objectContaining({ toolName: "echo_upper", isError: false }),
      ]),
    );
    expect(JSON.stringify(ends)).toContain("fixture tool exploded on purpose");
    expect(model.requests).toHaveLength(2);
    expect(run.stdout).toContain("recovered");
  });

  it("ends a tool call whose work fails after it returned (a timer, a promise, a socket) with the error, and the run goes on", async () => {
    await freshHome();
    const extensions = await extensionsWith("echo_upper.ts", "throws_later.ts");
    cleanups.push(() => rm(extensions, { recursive: true, force: true }));
    const model = await scriptedModel(
      {
        toolCalls: [
          { name: "throws_later", arguments: { how: "timer" } },
          { name: "throws_later", arguments: { how: "rejection" } },
          { name: "throws_later", arguments: { how: "socket" } },
          { name: "echo_upper", arguments: { text: "still here" } },
        ],
      },
      { text: "recovered" },
    );

    const run = await runInBox(engine, runPiArgs("try them all"), {
      home: home.dir,
      extensionsDir: extensions,
      ...(door ? { door } : {}),
    });
    // without the guard, the first of them ended pi (exit 1) and the run with it
    expect(run.exitCode, run.stderr).toBe(0);
    const ends = piEvents(run.stdout).filter((event) => event.type === "tool_execution_end");
    const failed = ends.filter((event) => event.toolName === "throws_later");
    expect(failed).toHaveLength(3);
    for (const end of failed) expect(end).toMatchObject({ isError: true });
    const said = JSON.stringify(failed);
    expect(said).toContain("the tool failed: a timer threw inside the tool");
    expect(said).toContain("the tool failed: a promise inside the tool was rejected");
    expect(said).toContain("the tool failed: connect ECONNREFUSED 127.0.0.1:1");
    expect(ends).toContainEqual(
      expect.objectContaining({ toolName: "echo_upper", isError: false }),
    );
    expect(model.requests).toHaveLength(2);
    expect(run.stdout).toContain("recovered");
  });

  it("stops with a message naming the file when an extension fails to load", async () => {
    await freshHome();
    const extensions = await extensionsWith("broken_load.ts");
    cleanups.push(() => rm(extensions, { recursive: true, force: true }));
    const model = await scriptedModel({ text: "should never be asked" });

    const run = await runInBox(engine, runPiArgs("hello"), {
      home: home.dir,
      extensionsDir: extensions,
      ...(door ? { door } : {}),
    });
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toContain("/opt/roster/engine/extensions/broken_load.ts");
    expect(run.stderr).toContain("fixture extension refuses to load");
    expect(model.requests).toHaveLength(0);
  });
});
