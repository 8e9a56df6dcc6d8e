import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeHome, type TestHome } from "../support/box-home.ts";
import { testDocker, testEngine } from "../support/docker.ts";
import { runInBox } from "../support/pi-box.ts";

const docker = await testDocker();
const engine = (await testEngine()) as NonNullable<Awaited<ReturnType<typeof testEngine>>>;

describe.skipIf(!docker)("roster-lock", () => {
  let home: TestHome;

  beforeAll(async () => {
    home = await makeHome();
  });
  afterAll(async () => home?.cleanup());

  it("runs two holders of the same lock one after the other, in two boxes", async () => {
    const holder = (tag: string) =>
      runInBox(
        engine,
        [
          "roster-lock",
          "build",
          "--",
          "bash",
          "-c",
          `echo "${tag} start $(date +%s%N)" >> "$HOME/store/lock.log"; sleep 1.5; echo "${tag} end $(date +%s%N)" >> "$HOME/store/lock.log"`,
        ],
        { home: home.dir },
      );
    const [a, b] = await Promise.all([holder("a"), holder("b")]);
    expect(a.exitCode, a.stderr).toBe(0);
    expect(b.exitCode, b.stderr).toBe(0);

    const lines = (await readFile(join(home.dir, "store/lock.log"), "utf8")).trim().split("\n");
    const events = lines.map((line) => {
      const [tag, kind, at] = line.split(" ");
      return { tag, kind, at: BigInt(at ?? "0") };
    });
    expect(events).toHaveLength(4);
    // Whoever went first ended before the other started: never overlapped.
    expect(events[0]?.kind).toBe("start");
    expect(events[1]).toMatchObject({ tag: events[0]?.tag, kind: "end" });
    expect(events[2]?.kind).toBe("start");
    expect(events[3]).toMatchObject({ tag: events[2]?.tag, kind: "end" });
    expect(events[2]?.tag).not.toBe(events[0]?.tag);
  });

  it.each([["../escape"], [".hidden"], ["a/b"], [""]])(
    "refuses the lock name %j with a usage error",
    async (name) => {
      const run = await runInBox(engine, ["roster-lock", name, "--", "true"], {
        home: home.dir,
      });
      expect(run.exitCode).toBe(64);
      expect(run.stderr).toContain("usage: roster-lock <name> -- <command>");
    },
  );

  it("refuses a call without the -- separator", async () => {
    const run = await runInBox(engine, ["roster-lock", "build", "true", "x"], {
      home: home.dir,
    });
    expect(run.exitCode).toBe(64);
  });
});
