import { columns } from "../../ground/text/table.ts";
import type { SnapshotMeta } from "./snapshots.ts";

/** `roster worker restore --list`: a store's snapshots, oldest first, with what made each. */
const WHY: Record<SnapshotMeta["reason"], string> = {
  run: "after run",
  sweep: "daily sweep",
  "before-restore": "before a restore",
};

export function formatSnapshots(snapshots: SnapshotMeta[], what: string): string {
  if (snapshots.length === 0) return `${what} has no snapshots yet`;
  const header = ["SNAPSHOT", "MADE (UTC)", "BY", "CHANGES"];
  const rows = snapshots.map((snapshot) => [
    snapshot.name,
    snapshot.made_at.slice(0, 19).replace("T", " ") || "-",
    `${WHY[snapshot.reason] ?? snapshot.reason}${snapshot.run ? ` ${snapshot.run}` : ""}`,
    `+${snapshot.added} ~${snapshot.changed} -${snapshot.removed}${snapshot.skipped.length ? ` (${snapshot.skipped.length} skipped)` : ""}`,
  ]);
  return columns([header, ...rows]);
}
