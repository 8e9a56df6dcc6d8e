import { Type } from "@sinclair/typebox";

/**
 * Which runs may push to a gated repo (the clean-room rule), spelled one way
 * in both places it is set: org.toml `[knowledge] write_from` (a worker's own
 * knowledge repo) and a host-repo connection's `write_from`. "clean-room":
 * only runs that carried no conversation; "any-run": every run, a push
 * naming someone from the run's conversations still refused where the repo
 * is scanned. The public roster spells it so in both places; roster's older
 * spellings ("any" in `[knowledge]`, "clean" / "any" on a host-repo) are
 * still read, and the loader keeps one spelling from then on.
 */
export const WRITE_FROM_SPELLINGS = ["clean-room", "any-run", "clean", "any"] as const;
export type WriteFromSpelling = (typeof WRITE_FROM_SPELLINGS)[number];

export const WriteFrom = Type.Union(
  WRITE_FROM_SPELLINGS.map((spelling) => Type.Literal(spelling)),
  { description: 'who may push: "clean-room" (runs that carried no conversation) or "any-run"' },
);

export type WriteFromRule = "clean-room" | "any-run";

/** The one spelling of a rule however it was written. */
export function writeFromRule(spelling: WriteFromSpelling): WriteFromRule {
  return spelling === "any" || spelling === "any-run" ? "any-run" : "clean-room";
}

/** Whether runs that carried a conversation may push: only when it says so. */
export function writesFromAny(spelling: WriteFromSpelling | undefined): boolean {
  return spelling !== undefined && writeFromRule(spelling) === "any-run";
}

/** A `[knowledge]` table's write_from in the one spelling, in place, before anything compares it. */
export function spellWriteFrom(section: { write_from?: WriteFromSpelling } | undefined): void {
  if (section?.write_from) section.write_from = writeFromRule(section.write_from);
}
