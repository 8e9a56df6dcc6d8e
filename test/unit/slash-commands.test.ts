import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { designationOf, readDesignations } from "../../runner/records/channels/designations.ts";
import { ensureChannel } from "../../runner/records/channels/store.ts";
import { runDir, writeRecord } from "../../runner/records/run-records/run-record.ts";
import { slashCommand } from "../../runner/services/actions/slash-commands.ts";

/**
 * What a person types after "/" to the host (today in `roster talk`): answered
 * from the records on the host, never passed to the worker.
 */
let root: string;
let paths: RosterPaths;
const ELF_RUN = "2026-07-10-09-00-00-000aaaaaaaa";
const IMP_RUN = "2026-07-10-10-00-00-000bbbbbbbb";

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "roster-slash-"));
  paths = rosterPaths({ ROSTER_ROOT: root });
  await writeRecord(runDir(paths.state, "elf", ELF_RUN), {
    id: ELF_RUN,
    worker: "elf",
    kind: "task",
    state: "done",
    started_at: "2026-07-10T09:00:00.000Z",
    ended_at: "2026-07-10T09:02:00.000Z",
    ended_by: "exit",
    exit_code: 0,
    task_id: "t-tidy",
  });
  await writeRecord(runDir(paths.state, "imp", IMP_RUN), {
    id: IMP_RUN,
    worker: "imp",
    kind: "box",
    state: "failed",
    started_at: "2026-07-10T10:00:00.000Z",
    ended_by: "ceiling",
  });
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("slash commands answered on the host", () => {
  it("/runs lists this worker's last runs and no other worker's", async () => {
    const answer = await slashCommand(paths, "elf", "/runs", "ann");
    expect(answer).toContain(ELF_RUN);
    expect(answer).not.toContain(IMP_RUN);
    expect(await slashCommand(paths, "ghost", "/runs", "ann")).toBe("ghost has no runs yet");
  });

  it("/runs <id> shows one run's outcome by any unique prefix, only of this worker", async () => {
    const shown = await slashCommand(paths, "elf", "/runs 2026-07-10-09", "ann");
    expect(shown).toContain(`run       ${ELF_RUN}`);
    expect(shown).toMatch(/done/);
    expect(await slashCommand(paths, "elf", `/runs ${IMP_RUN}`, "ann")).toBe(
      `/runs: ${IMP_RUN} is a run of imp, not of elf`,
    );
    expect(await slashCommand(paths, "elf", "/runs 1999", "ann")).toBe(
      '/runs: no run matches "1999"',
    );
  });

  it("/help names /runs, and an unknown command says how to reach the worker instead", async () => {
    expect(await slashCommand(paths, "elf", "/help", "ann")).toContain("/runs [id]");
    expect(await slashCommand(paths, "elf", "/bogus", "ann")).toMatch(/^unknown command \/bogus/);
  });

  it("/channel shows this channel's standing and purpose, and trust, untrust and mode change it", async () => {
    const id = "term-ann-elf";
    ensureChannel(paths, id);
    await writeFile(join(paths.data, "channels", id, "purpose.md"), "Ann's desk.\nMore.\n");
    const shown = await slashCommand(paths, "elf", "/channel", "ann", id);
    expect(shown).toMatch(/^channel {3}term-ann-elf$/m);
    expect(shown).toMatch(/^trusted {3}yes \(default\)$/m);
    expect(shown).toMatch(/^purpose {3}Ann's desk\.$/m);
    expect(await slashCommand(paths, "elf", "/channel untrust", "ann", id)).toMatch(/is untrusted/);
    expect(await slashCommand(paths, "elf", "/channel mode mention", "ann", id)).toMatch(
      /only messages that mention/,
    );
    const after = designationOf(readDesignations(paths), id);
    expect(after).toMatchObject({ trusted: false, trustedBy: "operator", mode: "mention" });
    expect(await slashCommand(paths, "elf", "/channel mode loud", "ann", id)).toBe(
      "/channel mode: all or mention",
    );
    expect(await slashCommand(paths, "elf", "/channel", "ann")).toBe(
      "/channel: this surface is not a channel",
    );
  });
});
