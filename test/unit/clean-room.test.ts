import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { runDir, writeRecord } from "../../runner/records/run-records/run-record.ts";
import { updateTasks } from "../../runner/records/task-list/store.ts";
import {
  cleanRoomRefusal,
  participantFindings,
  participantMatcher,
} from "../../runner/work/repos/clean-room.ts";
import { readRunContext, writeRunContext } from "../../runner/work/runs/run-context.ts";
import { mainOf, makeCanonical, sh } from "../support/repos.ts";

/**
 * The clean-room rule on its own: who may push where, how a participant's
 * name is found in a push, and where a run's provenance comes from.
 */
const people = [
  { name: "Ann", handle: "ann" },
  { name: "Zoë Brandt", handle: "zbrandt" },
];

describe("the clean-room rule", () => {
  it("refuses a conversation run on a clean repo only, naming the rule and what would change it", () => {
    const talkRun = { channels: ["term-ann-elf"] };
    const clean = cleanRoomRefusal("app", { writeFrom: "clean" }, talkRun);
    expect(clean).toContain("refused by the clean-room rule");
    expect(clean).toContain("term-ann-elf");
    expect(clean).toContain('write_from = "any-run"');
    expect(cleanRoomRefusal("app", { writeFrom: "any" }, talkRun)).toBeUndefined();
    expect(cleanRoomRefusal("app", { writeFrom: "clean" }, { channels: [] })).toBeUndefined();
  });

  it("finds a participant's name or handle as a whole word, in any case", () => {
    const match = participantMatcher(people);
    expect(match("ask ANN about it")).toBe("ANN");
    expect(match("the annual report")).toBeUndefined();
    expect(match("zoë brandt said so")).toBe("zoë brandt");
    expect(match("ping @zbrandt")).toBe("zbrandt");
    expect(match("Zoëlle is someone else")).toBeUndefined();
    expect(participantMatcher([])("Ann")).toBeUndefined();
  });

  it("scans what a push adds, its paths and its messages, not what the branch already had", async () => {
    const repo = makeCanonical({ "team.md": "Ann keeps the keys\n" });
    const base = mainOf(repo);
    const work = join(repo, "..", "work");
    sh(join(repo, ".."), ["clone", "-q", repo, work]);
    writeFileSync(join(work, "team.md"), "Ann keeps the keys\nnew line\n");
    writeFileSync(join(work, "plan.md"), "one\ntwo\nsee zbrandt\n");
    mkdirSync(join(work, "ann"));
    writeFileSync(join(work, "ann/notes.md"), "nothing\n");
    sh(work, ["add", "-A"]);
    sh(work, ["commit", "-qm", "as Zoë Brandt asked"]);
    const head = sh(work, ["rev-parse", "HEAD"]).trim();
    const findings = await participantFindings({
      dir: work,
      base,
      head,
      paths: ["team.md", "plan.md", "ann/notes.md"],
      people,
      maxBytes: 1024 * 1024,
    });
    expect(findings).toEqual([
      `the path "ann/notes.md" names ann, a participant of this run's conversations`,
      `"plan.md" line 3 names zbrandt, a participant of this run's conversations`,
      `commit ${head.slice(0, 12)}'s message names Zoë Brandt, a participant of this run's conversations`,
    ]);
  });
});

describe("a run's provenance", () => {
  const deployment = () => rosterPaths({ ROSTER_ROOT: mkdtempSync(join(tmpdir(), "roster-ctx-")) });
  const history = (paths: ReturnType<typeof rosterPaths>, channel: string) => {
    mkdirSync(join(paths.data, "channels", channel), { recursive: true });
    writeFileSync(
      join(paths.data, "channels", channel, "messages.jsonl"),
      [
        { author_id: "term:ann", author: "Ann", role: "user" },
        { author_id: "worker:elf", author: "elf", role: "worker" },
        { author_id: "discord:42", author: "Zoë Brandt", role: "user" },
      ]
        .map((m) =>
          JSON.stringify({ ts: "2026-11-01T10:00:00Z", content: "hi", attachments: [], ...m }),
        )
        .join("\n"),
    );
  };
  const record = (id: string, extra: Record<string, unknown>) => ({
    id,
    worker: "elf",
    kind: "box" as const,
    state: "running" as const,
    started_at: "2026-11-01T10:00:00Z",
    ...extra,
  });

  it("a session carries its channel and the people who spoke there, workers left out", async () => {
    const paths = deployment();
    history(paths, "term-ann-elf");
    const dir = runDir(paths.state, "elf", "r1");
    const session = record("r1", { kind: "session", channel_id: "term-ann-elf" });
    await writeRecord(dir, session);
    const written = await writeRunContext(paths, dir, session);
    expect(written).toEqual({
      run: "r1",
      kind: "session",
      channels: ["term-ann-elf"],
      people: [
        { name: "Ann", handle: "ann" },
        { name: "Zoë Brandt", handle: "42" },
      ],
    });
    expect(readRunContext(paths, "elf", "r1")).toEqual(written);
  });

  it("a task carries the channel it was filed from and the conversations of the run that filed it", async () => {
    const paths = deployment();
    history(paths, "slack-t1-c1");
    await updateTasks(paths, "elf", () => [
      {
        id: "t-00000001",
        prompt: "x",
        ceiling_min: 5,
        state: "pending",
        filed_at: "2026-11-01T10:00:00Z",
        filed_by: "run:r0",
        context_channels: ["slack-t1-c1"],
      },
    ]);
    const dir = runDir(paths.state, "elf", "r2");
    await writeRecord(dir, record("r2", { kind: "task", task_id: "t-00000001" }));
    // no run-context.json: judged from the record, and the task it ran
    const context = readRunContext(paths, "elf", "r2");
    expect(context.channels).toEqual(["slack-t1-c1"]);
    expect(context.people).toHaveLength(2);
  });

  it("a one-shot run carries none; a run the host knows nothing of counts as conversation", async () => {
    const paths = deployment();
    await writeRecord(runDir(paths.state, "elf", "r3"), record("r3", {}));
    expect(readRunContext(paths, "elf", "r3")).toMatchObject({ channels: [], people: [] });
    expect(readRunContext(paths, "elf", "nowhere").channels).toEqual(["run:nowhere"]);
  });
});
