/**
 * Rows as aligned columns for a terminal: each column as wide as its widest
 * cell, two spaces between, no trailing blanks. The one table every listing
 * command prints (runs, workers, snapshots, channels); `--json` is for scripts.
 */
export function columns(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows)
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
