import iconv from "iconv-lite";

/**
 * Text from bytes: the charset from Content-Type, else a <meta charset> (or
 * http-equiv) in the first few KB, else UTF-8. Unknown labels fall back to
 * UTF-8 rather than failing. iconv-lite, not TextDecoder: Node builds without
 * full ICU decode windows-1252 wrongly.
 */
export function sniffCharset(contentType: string | undefined, head: Buffer): string | undefined {
  const fromHeader = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType ?? "")?.[1];
  if (fromHeader) return fromHeader;
  const text = head.subarray(0, 4096).toString("latin1");
  return (
    /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(text)?.[1] ??
    /<meta[^>]+content\s*=\s*["'][^"']*charset=([\w.:-]+)/i.exec(text)?.[1]
  );
}

export function decodeText(body: Buffer, contentType: string | undefined): string {
  const label = (sniffCharset(contentType, body) ?? "utf-8").toLowerCase();
  // browsers read latin1 as windows-1252; so do we (curly quotes live in 0x80–0x9f)
  const effective =
    label === "iso-8859-1" || label === "latin1" || label === "us-ascii" ? "windows-1252" : label;
  return iconv.encodingExists(effective)
    ? iconv.decode(body, effective)
    : iconv.decode(body, "utf-8");
}

/** Bytes that are not text: NULs or mostly control characters in the first KB. */
export function looksBinary(body: Buffer): boolean {
  const sample = body.subarray(0, 1024);
  if (sample.length === 0) return false;
  let control = 0;
  for (const byte of sample) {
    if (byte === 0) return true;
    if (byte < 9 || (byte > 13 && byte < 32)) control++;
  }
  return control / sample.length > 0.1;
}
