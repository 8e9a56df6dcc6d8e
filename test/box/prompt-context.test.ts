import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/**
 * `roster runs context` on real runs: the prompt each run kept, block by
 * block, with sizes and hashes that hold still from one run to the next
 * where nothing changed, a changed block marked, and the cache boundary
 * after the leading blocks two runs share byte for byte.
 */
const bash = (command: string): ScriptStep => ({
  toolCalls: [{ name: "bash", arguments: { command } }],
});

interface Block {
  label: string;
  chars: number;
  tokens: number;
  hash: string;
  since: string;
}
interface Context {
  run: string;
  previous?: string;
  blocks: Block[];
  cachedPrefix: number;
  cacheKey?: string;
  previousCacheKey?: string;
  stablePrefix: { blocks: number; hash: string };
}

describe.skipIf(!docker)("what the model was told, run by run", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  const runs: string[] = [];

  const run = async (...steps: ScriptStep[]) => {
    model.play(...steps, { text: "done" });
    const result = await deployment.roster(["run", "elf", "keep notes", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const ls = await deployment.roster(["runs", "ls", "--worker", "elf", "--json"]);
    const [newest] = JSON.parse(ls.stdout) as Array<{ id: string }>;
    if (!newest) throw new Error("no run recorded");
    runs.push(newest.id);
  };
  const context = async (id: string): Promise<Context> => {
    const shown = await deployment.roster(["runs", "context", id, "--json"]);
    expect(shown.code, shown.stderr).toBe(0);
    return JSON.parse(shown.stdout) as Context;
  };
  const block = (ctx: Context, label: string) => ctx.blocks.find((one) => one.label === label);

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "CONTEXT-KEY" });
    // the first run writes a note; the next two read it
    await run(
      bash(
        `mkdir -p ~/store/memory && echo '{"id":"ann","text":"Ann runs payments"}' >> ~/store/memory/memory.jsonl`,
      ),
    );
    await run();
    await run();
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("hashes hold still where nothing changed; a block that changed is marked", async () => {
    const [first, second, third] = runs;
    if (!first || !second || !third) throw new Error("three runs expected");
    const two = await context(second);
    const three = await context(third);
    expect(two.previous).toBe(first);
    expect(three.previous).toBe(second);
    for (const label of ["IDENTITY", "RUNTIME POLICY", "CONNECTIONS"]) {
      expect(block(three, label)?.since, label).toBe("same");
      expect(block(three, label)?.hash).toBe(block(two, label)?.hash);
    }
    // the note the first run wrote is new in the second run's prompt, and the same in the third's
    expect(block(two, "MEMORY")?.since).toMatch(/^(new|changed)$/);
    expect(block(three, "MEMORY")?.since).toBe("same");
    // the run's own id is in its scope: that block changes every run
    expect(block(three, "RUNTIME SCOPE")?.since).toBe("changed");
    const task = block(three, "TASK (input)");
    expect(task?.chars).toBe("keep notes".length);
    expect(task?.tokens).toBe(Math.ceil("keep notes".length / 4));
    // the stable blocks and the memory come first: a cache reaches past all four
    expect(three.blocks.slice(0, 4).map((one) => one.label)).toEqual([
      "IDENTITY",
      "RUNTIME POLICY",
      "CONNECTIONS",
      "MEMORY",
    ]);
    expect(three.cachedPrefix).toBe(4);
    // the tools go to the provider before the prompt: one run-specific word in them (a run
    // branch's name did) and no cache reaches the prompt at all
    const [secondAsked, thirdAsked] = model.requests.slice(-2).map((one) => one.body.tools);
    expect(thirdAsked?.length).toBeGreaterThan(0);
    expect(JSON.stringify(thirdAsked)).toBe(JSON.stringify(secondAsked));
  });

  it("draws the cache boundary in the table and shows each block's text with --all", async () => {
    const third = runs[2] ?? "";
    const table = await deployment.roster(["runs", "context", third.slice(0, 24)]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/── cache boundary: the 4 blocks above are byte-identical to /);
    expect(table.stdout).toMatch(/^\* RUNTIME SCOPE .* changed$/m);
    const all = await deployment.roster(["runs", "context", third, "--all"]);
    expect(all.stdout).toContain("Ann runs payments");
  });

  it("gives runs that begin the same one prompt-cache key, which pi takes as its session", async () => {
    const [first, second, third] = runs;
    if (!first || !second || !third) throw new Error("three runs expected");
    const [one, two, three] = await Promise.all([context(first), context(second), context(third)]);
    expect(one.cacheKey).toMatch(/^roster-[0-9a-f]{24}$/);
    // the memory block differs from the first run's, the key does not: it covers what every run begins with
    expect(two.cacheKey).toBe(one.cacheKey);
    expect(three.cacheKey).toBe(two.cacheKey);
    expect(three.previousCacheKey).toBe(two.cacheKey);
    expect(three.stablePrefix.blocks).toBe(3);
    const table = await deployment.roster(["runs", "context", third]);
    expect(table.stdout).toContain(`prompt-cache key: ${three.cacheKey} (the same as ${second});`);
  });
});
