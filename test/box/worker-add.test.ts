import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/**
 * A worker added from the CLI is a worker like elf: its first box run, through
 * the real gateway and the scripted model, carries its identity, writes its
 * store and clones its knowledge repo; `worker ls` then shows that run, and
 * `worker rm` keeps what it wrote in the archive.
 */
describe.skipIf(!docker)("a worker added with roster worker add", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "MODEL-KEY-7" });
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("runs in a box, keeps its store, is listed, and is archived whole", async () => {
    const added = await deployment.roster(["worker", "add", "scout"]);
    expect(added.code, added.stderr).toBe(0);

    model.play(
      {
        toolCalls: [
          {
            name: "bash",
            arguments: {
              command:
                "echo kept-by-scout > ~/store/note.txt && git -C ~/mnt/knowledge log --oneline",
            },
          },
        ],
      },
      (request) => {
        const tool = [...(request.body.messages ?? [])].reverse().find((m) => m.role === "tool");
        return { text: `done: ${JSON.stringify(tool?.content ?? "")}` };
      },
    );
    const run = await deployment.roster(["run", "scout", "Leave a note"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("knowledge repo of scout");
    const system = model.requests[0]?.body.messages?.find((message) => message.role === "system");
    expect(JSON.stringify(system?.content)).toContain(
      "You are scout, a careful general-purpose worker.",
    );
    const store = join(deployment.paths.data, "workers/scout/store/note.txt");
    expect(readFileSync(store, "utf8")).toBe("kept-by-scout\n");

    const ls = await deployment.roster(["worker", "ls", "--json"]);
    const scout = ls.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { name: string; state: string; last_run: unknown })
      .find((row) => row.name === "scout");
    expect(scout).toMatchObject({
      state: "idle",
      last_run: { kind: "box", state: "done", ended_by: "exit" },
    });

    const rm = await deployment.roster(["worker", "rm", "scout", "--yes", "--json"]);
    expect(rm.code, rm.stderr).toBe(0);
    const { archive } = JSON.parse(rm.stdout) as { archive: string };
    expect(readFileSync(join(archive, "data/store/note.txt"), "utf8")).toBe("kept-by-scout\n");
    const gone = await deployment.roster(["run", "scout", "Are you there?"]);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain('no worker named "scout"');
  });
});
