/**
 * Gated repos: what a run's clone costs, with `--shared` (what roster does:
 * the canonical objects are borrowed read-only) against a full local copy
 * (`--no-hardlinks`; hard links are never an option, a box could write through
 * them), for a repository of ~10k files; and how long the host takes to check
 * and hold a 100-commit push.
 *
 *   npx tsx bench/repos.ts            (no Docker needed)
 *
 * The tree is the project's own node_modules (the first 10,000 files), a
 * stand-in for a real project that is available offline.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { REPO_DEFAULTS } from "../runner/ground/config/connections.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";
import { readRecord, runDir, writeRecord } from "../runner/records/run-records/run-record.ts";
import { cloneRunRepos } from "../runner/work/repos/clone.ts";
import { checkAndHold, incomingRef } from "../runner/work/repos/push.ts";
import { readRunContext } from "../runner/work/runs/run-context.ts";

const FILES = 10_000;
const RUNS = 5;
const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "bench",
  GIT_AUTHOR_EMAIL: "bench@example.test",
  GIT_COMMITTER_NAME: "bench",
  GIT_COMMITTER_EMAIL: "bench@example.test",
};
const git = (dir: string, ...args: string[]) =>
  execFileSync("git", ["-c", "safe.directory=*", "-C", dir, ...args], {
    env,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};
const du = (dir: string) =>
  Number(execFileSync("du", ["-sb", dir], { encoding: "utf8" }).split("\t")[0]);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

const appMount = (canonical: string) => [
  {
    name: "app",
    path: canonical,
    readOnly: true,
    kind: "host-repo" as const,
    gated: { ...REPO_DEFAULTS, allowExecutables: false },
  },
];

function collect(dir: string, out: string[]): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (out.length >= FILES) return;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) collect(path, out);
    else if (entry.isFile()) out.push(path);
  }
}

const root = mkdtempSync(join(tmpdir(), "roster-bench-repos-"));
try {
  // the canonical repo
  const source = resolve("node_modules");
  const files: string[] = [];
  collect(source, files);
  const seed = join(root, "seed");
  mkdirSync(seed);
  git(seed, "init", "-q", "-b", "main");
  execFileSync("tar", [
    "-cf",
    join(root, "tree.tar"),
    "-C",
    source,
    ...files.map((f) => relative(source, f)),
  ]);
  execFileSync("tar", ["-xf", join(root, "tree.tar"), "-C", seed]);
  git(seed, "add", "-A");
  git(seed, "commit", "-q", "-m", "seed");
  const canonical = join(root, "canonical.git");
  execFileSync("git", ["clone", "-q", "--bare", seed, canonical], { env });
  const treeBytes = du(seed) - du(join(seed, ".git"));
  console.log(
    `repository: ${files.length} files, ${mb(treeBytes)} checked out, ${mb(du(canonical))} bare`,
  );

  // per-run clones
  const shared: number[] = [];
  const full: number[] = [];
  let sharedGit = 0;
  let fullGit = 0;
  for (let i = 0; i < RUNS; i++) {
    const run = join(root, `run-${i}`);
    mkdirSync(join(run, "home"), { recursive: true });
    let start = performance.now();
    await cloneRunRepos({
      mounts: appMount(canonical),
      runDir: run,
      runId: `r${i}`,
      home: join(run, "home"),
      worker: "bench",
    });
    shared.push(performance.now() - start);
    sharedGit = du(join(run, "repos/app/.git"));
    const copy = join(root, `copy-${i}`);
    start = performance.now();
    execFileSync("git", ["clone", "-q", "--no-hardlinks", "--branch", "main", canonical, copy], {
      env,
    });
    git(copy, "checkout", "-q", "-b", `run/r${i}`);
    full.push(performance.now() - start);
    fullGit = du(join(copy, ".git"));
  }
  console.log("\n| clone per run (median of 5) | time | .git on disk | work tree |");
  console.log("| --- | --- | --- | --- |");
  console.log(
    `| --shared (roster) | ${(median(shared) / 1000).toFixed(2)} s | ${mb(sharedGit)} | ${mb(treeBytes)} |`,
  );
  console.log(
    `| --no-hardlinks (full copy) | ${(median(full) / 1000).toFixed(2)} s | ${mb(fullGit)} | ${mb(treeBytes)} |`,
  );
  console.log(
    `| shared / full | ${(median(shared) / median(full)).toFixed(2)}x | ${(sharedGit / fullGit).toFixed(3)}x | 1x |`,
  );

  // a 100-commit push, checked and held
  const paths = rosterPaths({ ROSTER_ROOT: join(root, "roster") });
  mkdirSync(join(paths.config, "workers/bench"), { recursive: true });
  mkdirSync(join(paths.config, "connections"), { recursive: true });
  writeFileSync(join(paths.config, "org.toml"), "");
  writeFileSync(join(paths.config, "workers/bench/worker.toml"), 'name = "bench"\n');
  writeFileSync(
    join(paths.config, "connections/app.toml"),
    `kind = "host-repo"\npath = "${canonical}"\nwrite = "gated"\n\n[grant.bench]\n`,
  );
  const runId = "push-run";
  const dir = runDir(paths.state, "bench", runId);
  mkdirSync(join(dir, "home"), { recursive: true });
  const cloned = await cloneRunRepos({
    mounts: appMount(canonical),
    runDir: dir,
    runId,
    home: join(dir, "home"),
    worker: "bench",
  });
  await writeRecord(dir, {
    id: runId,
    worker: "bench",
    kind: "box",
    state: "running",
    started_at: new Date().toISOString(),
    repos: cloned.record,
  });
  const clone = join(dir, "repos/app");
  git(clone, "remote", "set-url", "origin", canonical);
  writeFileSync(join(clone, ".git/objects/info/alternates"), `${resolve(canonical, "objects")}\n`);
  for (let i = 0; i < 100; i++) {
    mkdirSync(join(clone, "notes"), { recursive: true });
    writeFileSync(
      join(clone, `notes/note-${i % 20}.md`),
      `# note ${i}\n\n${"line of text\n".repeat(50 + i)}`,
    );
    git(clone, "add", "-A");
    git(clone, "commit", "-q", "-m", `note ${i}`);
  }
  git(
    clone,
    "bundle",
    "create",
    "-q",
    ".git/roster-push.bundle",
    `origin/main..refs/heads/run/${runId}`,
  );
  const head = git(clone, "rev-parse", "HEAD").trim();
  const bundleBytes = statSync(join(clone, ".git/roster-push.bundle")).size;
  const checks: number[] = [];
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    const dir = runDir(paths.state, "bench", runId);
    await checkAndHold({
      paths,
      worker: "bench",
      runId,
      repo: "app",
      head,
      confirmBulkDelete: false,
      runDir: dir,
      cloneMode: readRecord(dir)?.repos?.app?.mode,
      readRunContext,
    });
    checks.push(performance.now() - start);
    git(canonical, "update-ref", "-d", incomingRef("bench", runId, head));
  }
  console.log(
    `\n| push check (100 commits, 20 files, bundle ${(bundleBytes / 1024).toFixed(0)} KB) | median of 3 |`,
  );
  console.log("| --- | --- |");
  console.log(
    `| intake, quarantine, fsck, rules, secret scan, hold | ${(median(checks) / 1000).toFixed(2)} s |`,
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}
