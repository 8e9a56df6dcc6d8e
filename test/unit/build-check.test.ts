import { execFile } from "node:child_process";
import { appendFileSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

/**
 * The compiled runner (dist/) must match runner/: `npm test` runs the check,
 * so stale output never passes. Built and checked here in a folder of the
 * test's own, never in the dist/ other tests are running.
 */
const run = promisify(execFile);
const script = join(import.meta.dirname, "../../scripts/build-runner.mjs");
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function check(outdir: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [script, "--check", "--outdir", outdir]);
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? 1, output: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
  }
}

/** One build, in a folder of this file's own, for the tests that read what the CLI loads. */
let built: Promise<string> | undefined;
function freshBuild(): Promise<string> {
  built ??= mkdtemp(join(tmpdir(), "roster-dist-")).then(async (outdir) => {
    dirs.push(outdir);
    await run(process.execPath, [script, "--outdir", outdir]);
    return outdir;
  });
  return built;
}

describe("the compiled runner's staleness check", () => {
  it("passes on fresh output and fails, naming a file, on changed, missing or extra output", async () => {
    const outdir = await mkdtemp(join(tmpdir(), "roster-dist-"));
    dirs.push(outdir);
    await run(process.execPath, [script, "--outdir", outdir]);
    expect(await check(outdir)).toMatchObject({ code: 0 });

    appendFileSync(join(outdir, "roster.js"), "\n// edited by hand\n");
    const changed = await check(outdir);
    expect(changed.code).toBe(1);
    expect(changed.output).toMatch(/is stale \(roster\.js\): run npm run build/);

    await run(process.execPath, [script, "--outdir", outdir]);
    const chunk = readdirSync(outdir).find((name) => name.startsWith("chunk-"));
    rmSync(join(outdir, String(chunk)));
    expect((await check(outdir)).output).toContain(`(${chunk})`);

    await run(process.execPath, [script, "--outdir", outdir]);
    appendFileSync(join(outdir, "left-over.js"), "export {};\n");
    expect((await check(outdir)).output).toContain("(left-over.js)");
  });

  it("starts the CLI without loading the schema, TOML or Docker libraries", async () => {
    // every command pays for what the entry imports statically: keep those
    // libraries behind the commands that use them (~60 ms of each start)
    const outdir = await freshBuild();
    const loaded = new Set<string>();
    const visit = (file: string) => {
      if (loaded.has(file)) return;
      loaded.add(file);
      const text = readFileSync(join(outdir, file), "utf8");
      for (const match of text.matchAll(/^(?:import|export)\b[^;]*?"\.\/([^"]+)"/gm))
        if (match[1]) visit(match[1]);
    };
    visit("roster.js");
    expect(loaded.size).toBeGreaterThan(1);
    const sources = [...loaded].map((file) => readFileSync(join(outdir, file), "utf8")).join("\n");
    for (const library of ["@sinclair/typebox", "smol-toml", "dockerode", "docker-modem"])
      expect(sources, `${library} is loaded at start`).not.toContain(`// node_modules/${library}/`);
  });

  it("hands a run to a server loading neither the config nor Node's bundled undici", async () => {
    // what `roster run` loads before the server has the run is time on its answer
    const outdir = await freshBuild();
    const chunk = (prefix: string) => {
      const name = readdirSync(outdir).find((file) =>
        new RegExp(`^${prefix}-[A-Z0-9]+\\.js$`).test(file),
      );
      expect(name, `a ${prefix} chunk`).toBeDefined();
      return join(outdir, String(name));
    };
    const probe = `
      const { pathToFileURL } = await import("node:url");
      for (const file of ${JSON.stringify([chunk("run"), chunk("run-client")])})
        await import(pathToFileURL(file).href);
      console.log(process.moduleLoadList.filter((name) => name.includes("undici")).length);`;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", probe]);
    // an ES import of node:http reads its lazy WebSocket getter, which loads undici (~50 ms)
    expect(stdout.trim()).toBe("0");
    const runChunk = readFileSync(chunk("run"), "utf8");
    expect(runChunk, "the run command's chunk imports the platforms statically").not.toMatch(
      /^import\b[^;]*"\.\/platforms-/m,
    );
  });
});
