import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * One vault file sealed with AES-256-GCM: a fresh 12-byte IV per write, and
 * the credential's name bound as additional data, so a file copied or renamed
 * to another credential's name fails to open rather than serve the wrong
 * secret. The envelope is JSON so a reader tells it from a plaintext file.
 */
const MARK = "roster_sealed";
const ALGORITHM = "aes-256-gcm";

export interface Envelope {
  [MARK]: 1;
  alg: typeof ALGORITHM;
  iv: string;
  tag: string;
  data: string;
}

const aad = (name: string) => Buffer.from(`roster-vault:${name}`, "utf8");

export function seal(name: string, plaintext: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv(ALGORITHM, key, iv);
  cipher.setAAD(aad(name));
  const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  const envelope: Envelope = {
    [MARK]: 1,
    alg: ALGORITHM,
    iv: iv.toString("base64"),
    tag: cipher.getAuthTag().toString("base64"),
    data: data.toString("base64"),
  };
  return `${JSON.stringify(envelope)}\n`;
}

/** The parsed file as an envelope, or undefined for a plaintext credential. */
export function envelopeOf(parsed: unknown): Envelope | undefined {
  if (typeof parsed !== "object" || parsed === null || !(MARK in parsed)) return undefined;
  return parsed as Envelope;
}

/** The plaintext, or undefined when the key, the name or the bytes don't match (GCM's check). */
export function unseal(name: string, envelope: Envelope, key: Buffer): string | undefined {
  try {
    if (envelope.alg !== ALGORITHM) return undefined;
    const iv = Buffer.from(envelope.iv, "base64");
    if (iv.length !== 12) return undefined;
    const decipher = createDecipheriv(ALGORITHM, key, iv);
    decipher.setAAD(aad(name));
    decipher.setAuthTag(Buffer.from(envelope.tag, "base64"));
    return Buffer.concat([
      decipher.update(Buffer.from(envelope.data, "base64")),
      decipher.final(),
    ]).toString("utf8");
  } catch {
    return undefined;
  }
}
