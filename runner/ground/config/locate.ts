/**
 * Finds the line a TOML value came from, for error messages: `file:line: field`.
 * smol-toml gives positions only for syntax errors, so a validated path such as
 * /grant/2/match/host is traced back through the text: the third `[[grant]]`
 * header, then a `[grant.match]` sub-table or an inline `match = {…}`, then the
 * `host =` line. Falls back to the nearest enclosing header.
 */
export function locateLine(text: string, pointer: string): number {
  const lines = text.split("\n");
  const segments = pointer.split("/").filter(Boolean).map(decodeSegment);
  let start = 0;
  let end = lines.length;
  let best = 0;
  const dotted: string[] = [];

  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i] ?? "";
    const next = segments[i + 1];
    if (next !== undefined && /^\d+$/.test(next)) {
      // an array of tables: [[a.b]] headers, the index-th one
      dotted.push(segment);
      const header = new RegExp(`^\\s*\\[\\[\\s*${escapeRegex(dotted.join("."))}\\s*\\]\\]`);
      const hits = indexesOf(lines, header, start, end);
      const at = hits[Number(next)];
      if (at === undefined) break;
      start = at;
      best = at;
      end = hits[Number(next) + 1] ?? nextSameOrEnd(lines, at, end);
      i++;
      continue;
    }
    dotted.push(segment);
    const table = new RegExp(`^\\s*\\[\\s*${escapeRegex(dotted.join("."))}\\s*\\]`);
    const tableAt = indexesOf(lines, table, start, end)[0];
    if (tableAt !== undefined) {
      best = tableAt;
      start = tableAt;
      continue;
    }
    const key = new RegExp(`(^|[{,\\s])"?${escapeRegex(segment)}"?\\s*=`);
    const keyAt = indexesOf(lines, key, start, end)[0];
    if (keyAt !== undefined) {
      best = keyAt;
      start = keyAt;
      continue;
    }
    // no [a] of its own: it may only be a prefix of a deeper header, like [[a.b]]
    if (next === undefined) break;
  }
  return best + 1;
}

function indexesOf(lines: string[], pattern: RegExp, from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i < to; i++) {
    const line = lines[i];
    if (line !== undefined && pattern.test(line.replace(/#.*$/, ""))) out.push(i);
  }
  return out;
}

/** The end of an array-of-tables element: the next top-level [[...]] header that is not nested in it. */
function nextSameOrEnd(lines: string[], at: number, end: number): number {
  for (let i = at + 1; i < end; i++) {
    if (/^\s*\[\[/.test(lines[i] ?? "")) return i;
  }
  return end;
}

function decodeSegment(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
