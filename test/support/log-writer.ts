/**
 * A process that appends numbered lines to a log the way roster's own writers
 * do (FollowingAppender, as the door's audit log; or appendJsonLine, opened
 * per line, as the journals), until it has written `count` lines. Used by the
 * rotation test to rotate a log under a live writer and account for every
 * line. Not a double: it drives our own code.
 *
 * It writes in bursts of BURST lines, each more than the test's max_file, as
 * fast as it can; after a burst it waits (up to 250 ms) until the log has
 * been rotated since the burst began (a rotated segment newer than any before it; not the
 * live file's inode, which a new file may reuse once a segment is gzipped
 * and its own freed). So however
 * busy the machine, the log is rotated while it is written, and as often as
 * the test counts on: a writer that ran ahead of the rotator would otherwise
 * finish with few rotations or none.
 *
 *   node --import tsx test/support/log-writer.ts <file> <writer-name> <count> <following|append>
 */
import { appendJsonLine } from "../../runner/ground/files/append-line.ts";
import { FollowingAppender } from "../../runner/ground/files/following-appender.ts";
import { logSegments } from "../../runner/ground/files/rotation/segments.ts";

const [file, name, countText, how] = process.argv.slice(2);
if (!file || !name || !countText || (how !== "following" && how !== "append"))
  throw new Error("usage: log-writer <file> <name> <count> <following|append>");
const count = Number(countText);
// a line of a few hundred bytes: a burst is ~50 KB, past the test's max_file of 32 KB
const pad = "x".repeat(200);
const BURST = 200;

/** When the log was last rotated, as its newest segment's name says; -1 before any. */
const lastRotated = (): number =>
  Math.max(-1, ...logSegments(file).flatMap((s) => (s.path === file ? [] : [s.rotatedAt ?? -1])));
async function rotatedSince(before: number): Promise<void> {
  // bounded: a following writer's burst may all have gone to the file just
  // renamed (it follows a rename on its next look), leaving the live one
  // too small to rotate again
  for (let waited = 0; lastRotated() <= before && waited < 250; waited += 2)
    await new Promise((resolve) => setTimeout(resolve, 2));
}

const out = how === "following" ? new FollowingAppender(file, 0o600, 20) : undefined;
for (let seq = 0; seq < count; ) {
  const before = lastRotated();
  for (const end = Math.min(count, seq + BURST); seq < end; seq++) {
    const line = { writer: name, seq, pad };
    if (out) out.write(`${JSON.stringify(line)}\n`);
    else appendJsonLine(file, line);
  }
  if (seq < count) await rotatedSince(before);
}
out?.close();
