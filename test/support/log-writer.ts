/**
 * A process that appends numbered lines to a log as fast as it can, the way
 * roster's own writers do (FollowingAppender, as the door's audit log; or
 * appendJsonLine, opened per line, as the journals), until it has written
 * `count` lines. Used by the rotation test to rotate a log under a live
 * writer and account for every line. Not a double: it drives our own code.
 *
 *   node --import tsx test/support/log-writer.ts <file> <writer-name> <count> <following|append>
 */
import { appendJsonLine } from "../../runner/ground/files/append-line.ts";
import { FollowingAppender } from "../../runner/ground/files/following-appender.ts";

const [file, name, countText, how] = process.argv.slice(2);
if (!file || !name || !countText || (how !== "following" && how !== "append"))
  throw new Error("usage: log-writer <file> <name> <count> <following|append>");
const count = Number(countText);
// a line of a few hundred bytes, so a small max_file rotates often
const pad = "x".repeat(200);
if (how === "following") {
  const out = new FollowingAppender(file, 0o600, 20);
  for (let seq = 0; seq < count; seq++)
    out.write(`${JSON.stringify({ writer: name, seq, pad })}\n`);
  out.close();
} else {
  for (let seq = 0; seq < count; seq++) appendJsonLine(file, { writer: name, seq, pad });
}
