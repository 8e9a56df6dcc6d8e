import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
import { runRoster } from "../support/cli.ts";

/**
 * The bad-input corpus: broken org.toml, worker.toml and connection files
 * (wrong types, unknown keys, duplicate names, bad host globs, bad paths,
 * TOML syntax errors, widenings), one per file in test/fixtures/bad-config/.
 * Each says where it goes (`# target:`) and what must be said about it
 * (`# expect: <line> <field>: <message>`). Each gives exit 2 from `roster
 * validate` with that file, line, field and message, and `roster run`
 * refuses on it the same way before anything starts. Add a file to add a case.
 */
const CORPUS = join(PROJECT_ROOT, "test/fixtures/bad-config");

interface Case {
  name: string;
  text: string;
  target: string;
  line: number;
  field: string;
  message: string;
}

function readCase(name: string): Case {
  const text = readFileSync(join(CORPUS, name), "utf8");
  const target = /^# target: (.+)$/m.exec(text)?.[1];
  const expect = /^# expect: (\d+) ([^:]+(?::[^ ][^:]*)*): (.+)$/m.exec(text);
  if (!target || !expect?.[1] || !expect[2] || !expect[3])
    throw new Error(`${name}: needs "# target: <file>" and "# expect: <line> <field>: <message>"`);
  return { name, text, target, line: Number(expect[1]), field: expect[2], message: expect[3] };
}

const cases = readdirSync(CORPUS)
  .filter((name) => name.endsWith(".toml"))
  .sort()
  .map(readCase);

interface Report {
  ok: boolean;
  errors: Array<{ file: string; line: number; field: string; message: string }>;
}

describe("bad input: a corpus of broken config files", () => {
  const roots: string[] = [];
  afterAll(async () => {
    for (const root of roots) await rm(root, { recursive: true, force: true });
  });

  it("has cases of every kind", () => {
    expect(cases.length).toBeGreaterThanOrEqual(20);
    for (const prefix of ["org-", "worker-", "connection-"])
      expect(cases.some((one) => one.name.startsWith(prefix))).toBe(true);
  });

  it.each(cases.map((one) => [one.name, one] as const))(
    "%s: exit 2 naming file, line and field; nothing starts",
    async (_name, one) => {
      const root = await mkdtemp(join(tmpdir(), "roster-bad-"));
      roots.push(root);
      const env = { ROSTER_ROOT: root, ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "" };
      expect((await runRoster(["init"], env)).code).toBe(0);
      const file = join(root, "config", one.target);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, one.text);

      const validated = await runRoster(["validate", "--json"], env);
      expect(validated.code, validated.stderr).toBe(2);
      const report = JSON.parse(validated.stdout) as Report;
      expect(report.ok).toBe(false);
      expect(report.errors).toContainEqual(
        expect.objectContaining({ line: one.line, field: one.field, message: one.message }),
      );
      const error = report.errors.find((entry) => entry.field === one.field);
      expect(error?.file.endsWith(one.target)).toBe(true);

      const run = await runRoster(["run", "--local", "elf", "hello"], env);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`${one.target}:${one.line}: ${one.field}: ${one.message}`);
      // refused before anything started: no run record, no box
      const runs = join(root, "state/runs");
      expect(existsSync(runs) ? readdirSync(runs) : []).toEqual([]);
    },
  );
});
