/**
 * Memory sizes as `[box] memory` writes them ("4g", "512m", "1.5g"): one parser
 * for the runner (the engine wants bytes) and for the loader (a worker's memory is
 * compared with the org's in bytes, not as text).
 */
const UNITS: Record<string, number> = { k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/** Bytes for a size such as "4g"; 0 for text that is not a size (the schema refuses it first). */
export function parseByteSize(value: string): number {
  const match = /^([0-9]+(?:\.[0-9]+)?)([kmg])$/i.exec(value);
  const amount = match?.[1];
  const unit = match?.[2]?.toLowerCase();
  return amount && unit ? Math.round(Number(amount) * (UNITS[unit] ?? 1)) : 0;
}

/** The shortest exact size text for a byte count: 4294967296 → "4g", 1536 MiB → "1536m". */
export function formatByteSize(bytes: number): string {
  for (const unit of ["g", "m", "k"]) {
    const size = UNITS[unit] ?? 1;
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return `${bytes}`;
}
