import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadyPool } from "../../runner/work/ready/pool.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * A worker with MCP servers never takes a ready box, nor has one made: its
 * servers are listed as pi starts, and a ready box's door opens only at
 * hand-off, so the run would have none of their tools.
 */
describe("ready boxes for a worker with MCP servers", () => {
  let deployment: RosterRoot;
  const notes: string[] = [];
  let pool: ReadyPool;

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
    const dir = join(deployment.paths.config, "workers", "tooled");
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, "worker.toml"),
      'name = "tooled"\n\n[[mcp]]\nname = "notes"\ncommand = ["node", "notes-server.js"]\n',
    );
    pool = new ReadyPool({
      paths: deployment.paths,
      note: (text) => notes.push(text),
      size: () => 1,
      idleMs: () => 60_000,
      room: () => true,
    });
  });
  afterAll(async () => {
    await pool?.close();
    await deployment?.cleanup();
  });

  it("starts the usual way: none is handed out, none is made behind it, for a run or a session", async () => {
    expect(await pool.take({ worker: "tooled" })).toBeUndefined();
    pool.want({ worker: "tooled", channel: "term-ops" });
    pool.tick();
    expect(pool.count()).toBe(0);
    expect(notes).toEqual([]);
  });
});
