/**
 * Text helpers shared by the executors: a one-line summary, and the split of a
 * long chat message into the parts a chat service accepts. The desk renders
 * the same parts the executor posts, so what a human approves is what is sent.
 */

export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * Splits `text` into parts of at most `limit` UTF-16 units (never more
 * characters than a service counts): at the last line break in the back half
 * of a part, else at the last space there, else hard (never inside a surrogate
 * pair). The break a part ends on is dropped; parts that would be only
 * whitespace are left out, since chat services refuse empty messages.
 */
export function splitText(text: string, limit: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    let cut = rest.lastIndexOf("\n", limit);
    if (cut < limit / 2) cut = rest.lastIndexOf(" ", limit);
    let next: number;
    if (cut >= limit / 2) {
      next = cut + 1;
    } else {
      cut = limit;
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1; // keep a surrogate pair whole
      next = cut;
    }
    parts.push(rest.slice(0, cut));
    rest = rest.slice(next);
  }
  parts.push(rest);
  return parts.filter((part) => part.trim() !== "");
}

/** What the desk shows: where it goes, then each part, marked when there are several. */
export function renderParts(destination: string, parts: string[]): string {
  if (parts.length === 1) return `${destination}\n\n${parts[0]}`;
  const marked = parts.map((part, index) => `[message ${index + 1} of ${parts.length}]\n${part}`);
  return `${destination}, in ${parts.length} messages\n\n${marked.join("\n\n")}`;
}

/** A payload text a chat service would post: at least one character that isn't whitespace. */
export const VISIBLE = "\\S";
