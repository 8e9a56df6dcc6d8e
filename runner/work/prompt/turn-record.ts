import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Each turn of a warm session as the engine was handed it (the messages as
 * JSON blocks, a purpose change or memory notes heading them), kept in the
 * run's folder as prompt/turns/<n>.md beside the system prompt, so `roster
 * runs context --all` shows every turn the session saw. Bounded: the first
 * MAX_TURNS turns, each cut at MAX_TURN_CHARS (said in the file); a turn is
 * never held up or failed by its record.
 */
export const MAX_TURNS = 500;
export const MAX_TURN_CHARS = 64 * 1024;

const turnsDir = (runDir: string) => join(runDir, "prompt", "turns");
const TURN_FILE = /^(\d{4,})\.md$/;

export function recordTurn(runDir: string, turn: number, input: string): void {
  if (turn < 1 || turn > MAX_TURNS) return;
  const text =
    input.length > MAX_TURN_CHARS
      ? `${input.slice(0, MAX_TURN_CHARS)}\n[cut: the turn was ${input.length} characters, ${MAX_TURN_CHARS} kept]`
      : input;
  try {
    mkdirSync(turnsDir(runDir), { recursive: true });
    writeFileSync(join(turnsDir(runDir), `${String(turn).padStart(4, "0")}.md`), text);
  } catch {
    // a record that can't be written (a full disk) loses the record, not the turn
  }
}

/** The turns kept for a run, in order; empty for a run that was no session (or kept none). */
export function readTurns(runDir: string): Array<{ turn: number; input: string }> {
  let names: string[];
  try {
    names = readdirSync(turnsDir(runDir));
  } catch {
    return [];
  }
  return names
    .flatMap((name) => {
      const match = TURN_FILE.exec(name);
      return match?.[1] ? [{ turn: Number(match[1]), name }] : [];
    })
    .sort((a, b) => a.turn - b.turn)
    .map(({ turn, name }) => ({
      turn,
      input: readFileSync(join(turnsDir(runDir), name), "utf8"),
    }));
}
