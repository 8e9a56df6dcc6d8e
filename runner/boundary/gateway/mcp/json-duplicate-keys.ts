/**
 * The first key that appears twice in one object of a JSON text, if any.
 * JSON.parse keeps the last of two equal keys, other parsers keep the first:
 * a message with both `"name": "echo"` and `"name": "delete_repo"` would be
 * judged as one tool and run as the other. The gateway refuses such a
 * message rather than guess which reading its server uses.
 *
 * Linear in the text: one pass, and each key decoded once. The text must
 * already have parsed (JSON.parse), so every string here is closed.
 */
export function firstDuplicateKey(text: string): string | undefined {
  // one entry per open container: the keys seen so far of an object, null for an array
  const open: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (char === QUOTE) {
      let end = index + 1;
      while (text.charCodeAt(end) !== QUOTE) end += text.charCodeAt(end) === BACKSLASH ? 2 : 1;
      const keys = open.at(-1);
      if (expectKey && keys) {
        // decoded, so "\u0061" and "a" are the same key, as every parser reads them
        const key = JSON.parse(text.slice(index, end + 1)) as string;
        if (keys.has(key)) return key;
        keys.add(key);
        expectKey = false;
      }
      index = end;
    } else if (char === OPEN_OBJECT) {
      open.push(new Set());
      expectKey = true;
    } else if (char === OPEN_ARRAY) {
      open.push(null);
      expectKey = false;
    } else if (char === CLOSE_OBJECT || char === CLOSE_ARRAY) {
      open.pop();
      expectKey = false;
    } else if (char === COMMA) {
      expectKey = Boolean(open.at(-1));
    } else if (char === COLON) {
      expectKey = false;
    }
  }
  return undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
