import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SENTINEL } from "../../runner/boundary/box/box-env.ts";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import { runRoster } from "../support/cli.ts";
import { testDocker } from "../support/docker.ts";
import {
  ModelServer,
  type RecordedRequest,
  type ScriptStep,
  textOf,
} from "../support/model-server.ts";
import { type PublicDeployment, publicDeployment } from "../support/public-deployment.ts";
import { freePort, latestRecord, testRuntime } from "../support/roster-root.ts";

const docker = await testDocker();

/**
 * The deployment in test/fixtures/public-roster (the public roster's
 * spellings only) runs its worker end to end in a real box through the real
 * door: its host-dir and gated host-repo connections are mounted, its
 * GitHub connection gives a sentinel, its message-user action is held for
 * the desk as its [[action]] says, its CEL meter spends on each model call,
 * and its worker's "every 30m" heartbeat is a recurring task. The one thing
 * the test adds is the environment: a model server standing in for the
 * provider (the fixture's own model connection points at one nobody can
 * reach from here), and a free port for the door.
 */
const callTool = (name: string, args: Record<string, unknown> = {}): ScriptStep => ({
  toolCalls: [{ name, arguments: args }],
});
const lastToolOutput = (request: RecordedRequest) =>
  textOf(
    [...(request.body.messages ?? [])].reverse().find((message) => message.role === "tool")
      ?.content,
  );

describe.skipIf(!docker)("a deployment written for the public roster, run here", () => {
  let model: ModelServer;
  let deployment: PublicDeployment;
  const roster = (args: string[]) => runRoster(args, deployment.env);

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await publicDeployment();
    const orgFile = join(deployment.paths.config, "org.toml");
    const runtime = testRuntime();
    const org = (await readFile(orgFile, "utf8")).replace(
      /^\[box\]\n/m,
      runtime ? `[box]\nruntime = "${runtime}"\n` : "[box]\n",
    );
    await writeFile(
      orgFile,
      `${org}\n[model]\nprovider = "openai-compatible"\nmodel = "scripted-1"\nbase_url = "${model.baseUrl("127.0.0.1")}"\n\n[gateway]\nport = ${await freePort()}\n`,
    );
  });
  afterAll(async () => {
    await model?.stop();
    if (deployment) await rm(deployment.root, { recursive: true, force: true });
  });

  it("runs dobby: its mounts, a sentinel for GitHub, a proposal held for the desk, the CEL meter spent", {
    tags: ["runtime"],
  }, async () => {
    let probe = "";
    model.play(
      callTool("bash", {
        command:
          'cat ~/mnt/notes/readme.md; git -C ~/mnt/research-kb rev-parse --abbrev-ref HEAD 2>&1 | head -1; echo "GH=$GH_TOKEN"',
      }),
      (request) => {
        probe = lastToolOutput(request);
        return {
          toolCalls: [
            { name: "message_user", arguments: { text: "The notes say: the door holds." } },
          ],
        };
      },
      { text: "All done." },
    );
    const run = await roster(["run", "dobby", "Read the notes and tell me what they say"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe("All done.");
    expect(probe).toContain("The notes say: the door holds.");
    expect(probe).toContain(`GH=${SENTINEL}`);
    expect(probe).not.toContain("github-token-from-the-vault");

    // the identity the fixture wrote is the one the model was given
    const system = JSON.stringify(model.requests[0]?.body.messages?.[0]?.content);
    expect(system).toContain("You are Dobby, the team's research assistant.");

    // message-user is trust = "gate" in its org.toml: held for a person
    const desk = await roster(["approvals", "ls", "--json"]);
    expect(desk.code, desk.stderr).toBe(0);
    expect(desk.stdout).toContain("The notes say: the door holds.");

    // the CEL meter (allowed POSTs: the model calls) spent model_calls and usd
    const record = latestRecord(deployment.paths, "dobby");
    expect(record).toMatchObject({ state: "done", ended_by: "exit", exit_code: 0 });
    const calls = readDecisions(deployment.paths.audit).filter(
      (line) => line.run_id === record?.id && line.request.path.endsWith("/chat/completions"),
    );
    expect(calls).toHaveLength(3);
    const budget = await roster(["budget", "--worker", "dobby", "--json"]);
    expect(budget.code, budget.stderr).toBe(0);
    const limits = budget.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { currency: string; window: string; used: number });
    expect(limits).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ currency: "model_calls", window: "day", used: 3 }),
        expect.objectContaining({ currency: "model_calls", window: "hour", used: 3 }),
      ]),
    );

    // "every 30m" is the worker's heartbeat, as roster's dispatcher files it
    const shown = await roster(["worker", "show", "dobby", "--json"]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ view: { heartbeat: { every: "30m" } } });
  });
});
