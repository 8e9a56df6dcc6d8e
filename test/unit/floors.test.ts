import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The runner's shape, held to what README.md and the gateway's rooms say of it:
 * six floors, each importing only the floors below it; no two folders that
 * import each other; no files that import each other in a loop; the gateway's
 * rooms importing only the rooms their README names; no file over 400 lines;
 * and nothing in extensions/ (the box's side) importing the host's runner/.
 * Read from the source text, so a move that breaks the shape fails here
 * before anyone has to draw it.
 */

const root = join(import.meta.dirname, "..", "..");
const FLOORS = ["ground", "records", "boundary", "work", "services", "cli"];
const GATEWAY = "runner/boundary/gateway";
const MAX_LINES = 400;

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sources(path);
    return /\.(ts|mts|mjs)$/.test(entry.name) ? [path] : [];
  });
}

/** Every relative import and re-export of a file, as paths from the project root. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), "utf8");
  const specifiers = text.matchAll(
    /(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)["'](\.{1,2}\/[^"']+)["']/gm,
  );
  return [...specifiers].map((match) =>
    relative(root, normalize(join(root, dirname(file), match[1] ?? ""))).replace(/\.js$/, ".ts"),
  );
}

const runnerFiles = sources("runner");
const edges = runnerFiles.flatMap((from) => importsOf(from).map((to) => ({ from, to })));

function floorOf(file: string): number {
  return FLOORS.indexOf(file.split("/")[1] ?? "");
}

/** The folder a file stands in, one level under its floor (a file on the floor itself is its own). */
function folderOf(file: string): string {
  return file.split("/").slice(0, 3).join("/");
}

function roomOf(file: string): string | undefined {
  if (!file.startsWith(`${GATEWAY}/`)) return undefined;
  const parts = file.slice(GATEWAY.length + 1).split("/");
  return parts.length > 1 ? parts[0] : undefined;
}

describe("the runner's floors", () => {
  it("finds the runner and its imports (a check that reads nothing proves nothing)", () => {
    expect(runnerFiles.length).toBeGreaterThan(300);
    expect(edges.length).toBeGreaterThan(1000);
    expect(new Set(runnerFiles.map(floorOf))).toEqual(new Set(FLOORS.map((_, i) => i)));
  });

  it("imports only the same floor or a floor below", () => {
    const upward = edges
      .filter(({ from, to }) => to.startsWith("runner/") && floorOf(to) > floorOf(from))
      .map(({ from, to }) => `${from} -> ${to}`);
    expect(upward).toEqual([]);
  });

  it("has no two folders that import each other", () => {
    const pairs = new Set(
      edges
        .map(({ from, to }) => [folderOf(from), folderOf(to)] as const)
        .filter(([a, b]) => a !== b)
        .map(([a, b]) => `${a} -> ${b}`),
    );
    const both = [...pairs].filter((pair) => {
      const [a, b] = pair.split(" -> ");
      return a !== undefined && a < (b ?? "") && pairs.has(`${b} -> ${a}`);
    });
    expect(both).toEqual([]);
  });

  it("has no files that import each other in a loop", () => {
    const next = new Map<string, string[]>();
    for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
    const state = new Map<string, "open" | "done">();
    const loops: string[] = [];
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        loops.push([...path.slice(path.indexOf(file)), file].join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const to of next.get(file) ?? []) visit(to, [...path, file]);
      state.set(file, "done");
    };
    for (const file of runnerFiles) visit(file, []);
    expect(loops).toEqual([]);
  });

  it(`keeps every runner file under ${MAX_LINES} lines`, () => {
    const long = runnerFiles
      .map((file) => ({
        file,
        lines: readFileSync(join(root, file), "utf8").split("\n").length - 1,
      }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines}`);
    expect(long).toEqual([]);
  });

  it("keeps the box's side from importing the host's", () => {
    const reaching = sources("extensions").flatMap((from) =>
      importsOf(from)
        .filter((to) => to.startsWith("runner/"))
        .map((to) => `${from} -> ${to}`),
    );
    expect(reaching).toEqual([]);
  });
});

describe("the gateway's rooms", () => {
  const rooms = readdirSync(join(root, GATEWAY), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);

  /** A room's README ends with "May import: a, b" (or "(no other room)"). */
  function mayImport(room: string): string[] {
    const text = readFileSync(join(root, GATEWAY, room, "README.md"), "utf8");
    const line = /^May import: (.*)$/m.exec(text)?.[1];
    if (line === undefined) throw new Error(`${GATEWAY}/${room}/README.md: no "May import:" line`);
    return line.startsWith("(") ? [] : line.split(",").map((name) => name.trim());
  }

  it("puts every gateway file in a room", () => {
    expect(rooms.length).toBeGreaterThanOrEqual(10);
    const loose = runnerFiles.filter((file) => file.startsWith(`${GATEWAY}/`) && !roomOf(file));
    expect(loose).toEqual([]);
  });

  it("names only rooms that exist in each room's README", () => {
    for (const room of rooms) for (const name of mayImport(room)) expect(rooms).toContain(name);
  });

  it("imports across rooms only where the importing room's README allows", () => {
    const allowed = new Map(rooms.map((room) => [room, new Set(mayImport(room))]));
    const strays = edges
      .map(({ from, to }) => ({ from, to, a: roomOf(from), b: roomOf(to) }))
      .filter(
        ({ a, b }) => a !== undefined && b !== undefined && a !== b && !allowed.get(a)?.has(b),
      )
      .map(({ from, to }) => `${from} -> ${to}`);
    expect(strays).toEqual([]);
  });
});
