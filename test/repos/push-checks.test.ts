import { generateKeyPairSync } from "node:crypto";
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withFileLock } from "../../runner/ground/files/file-lock.ts";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { approveGate } from "../../runner/services/actions/desk.ts";
import { showGate } from "../../runner/services/actions/desk-view.ts";
import { findGate } from "../../runner/services/actions/gates.ts";
import { incomingRef, laneLock } from "../../runner/work/repos/push.ts";
import { submitAction } from "../support/action-host.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import {
  bundle,
  commitAndBundle,
  fakeRunWithClone,
  mainOf,
  makeCanonical,
  sh,
  writeRepoConnection,
} from "../support/repos.ts";

/**
 * repo_push on the host, through the real gateway's action host with a run's
 * token, on real git repositories: what lands, what is refused and why, and
 * that nothing lands when it is refused. The clone is made by roster's own
 * code; the test plays the box's part (commit, bundle) on the host.
 */
let env: GatewayEnv;
let canonical: string;
let runCount = 0;

const ORG = `
[[action]]
name = "repo-push"
executor = "repo"
trust = "auto"
`;

async function newRun(worker = "elf", connection = "app") {
  runCount++;
  const runId = `2026-11-30-12-00-${String(runCount).padStart(2, "0")}-r${runCount}`;
  const clone = await fakeRunWithClone({ paths: env.paths, worker, runId, connection, canonical });
  const token = await env.token(worker, runId);
  const push = (head: string, extra: Record<string, unknown> = {}, repo = connection) =>
    submitAction(env, token, {
      intent: "repo-push",
      payload: { repo, head, ...extra },
      rationale: "tests",
    });
  return { runId, clone, token, push };
}

beforeAll(async () => {
  env = await startGatewayEnv(ORG);
  const files: Record<string, string> = { "README.md": "# app\n" };
  for (let i = 0; i < 30; i++) files[`docs/page-${i}.md`] = `page ${i}\n`;
  canonical = makeCanonical(files);
  mkdirSync(join(env.paths.config, "workers/elf"), { recursive: true });
  writeFileSync(join(env.paths.config, "workers/elf/worker.toml"), 'name = "elf"\n');
  mkdirSync(join(env.paths.config, "workers/imp"), { recursive: true });
  writeFileSync(join(env.paths.config, "workers/imp/worker.toml"), 'name = "imp"\n');
  await writeRepoConnection(env.paths, "app", canonical, "elf");
  writeFileSync(
    join(env.paths.config, "connections/docs.toml"),
    `kind = "host-repo"\npath = "${canonical}"\nwrite = "ro"\n\n[grant.elf]\n`,
  );
  await new Promise((resolve) => setTimeout(resolve, 600));
});
afterAll(async () => {
  await env?.cleanup();
});

describe("repo_push lands", () => {
  it("a clean push fast-forwards main, and the journal says so", async () => {
    const run = await newRun();
    const before = mainOf(canonical);
    writeFileSync(join(run.clone, "notes.md"), "# notes\nfirst\n");
    const head = commitAndBundle(run.clone, run.runId, "add notes");
    const reply = await run.push(head, { message: "add notes" });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.result).toMatchObject({ status: "landed", head, previous: before, files: 1 });
    expect(mainOf(canonical)).toBe(head);
    expect(sh(canonical, ["show", "main:notes.md"])).toBe("# notes\nfirst\n");
    const executed = readJournal(env.paths, "elf", 30).find(
      (event) => event.kind === "executed" && event.intent === "repo-push",
    );
    expect(executed?.detail).toMatchObject({ status: "landed", head });
    // nothing is left held once it landed
    expect(sh(canonical, ["for-each-ref", "refs/roster/incoming"])).toBe("");
  });

  it("a stale push is refused naming the new main; rebased, it lands", async () => {
    const run = await newRun();
    writeFileSync(join(run.clone, "mine.md"), "mine\n");
    let head = commitAndBundle(run.clone, run.runId, "mine");
    // someone else lands first
    const other = await newRun();
    writeFileSync(join(other.clone, "theirs.md"), "theirs\n");
    const theirs = commitAndBundle(other.clone, other.runId, "theirs");
    expect((await other.push(theirs)).status).toBe(200);

    const refused = await run.push(head);
    expect(refused.status).toBe(409);
    expect(String(refused.body.error)).toContain(`stale: main is now ${theirs}`);
    expect(mainOf(canonical)).toBe(theirs);

    sh(run.clone, ["fetch", "-q", "origin"]);
    sh(run.clone, ["rebase", "-q", "origin/main"]);
    head = sh(run.clone, ["rev-parse", "HEAD"]).trim();
    bundle(run.clone, run.runId);
    const landed = await run.push(head);
    expect(landed.status, JSON.stringify(landed.body)).toBe(200);
    expect(mainOf(canonical)).toBe(head);
    expect(sh(canonical, ["log", "--format=%s", "-3", "main"]).trim().split("\n")).toEqual([
      "mine",
      "theirs",
      expect.any(String),
    ]);
  });

  it("a bulk delete is refused, then re-proposed with confirmation it always gates, and lands once approved", async () => {
    const run = await newRun();
    sh(run.clone, ["rm", "-q", "-r", "docs"]);
    const head = commitAndBundle(run.clone, run.runId, "drop the docs");
    const before = mainOf(canonical);
    const refused = await run.push(head);
    expect(refused.status).toBe(409);
    expect(String(refused.body.error)).toMatch(
      /deletes 30 files, more than 20 \(max_deletions_ungated\).*confirm_bulk_delete: true/,
    );
    const gated = await run.push(head, { confirm_bulk_delete: true, message: "the docs moved" });
    expect(gated.status).toBe(202); // trust = "auto", and still held
    const gate = findGate(env.paths, String(gated.body.gate_id));
    const shown = showGate(env.paths, gate);
    expect(shown).toContain(`branch main: ${before.slice(0, 12)} → ${head.slice(0, 12)}`);
    expect(shown).toContain("30 files changed");
    expect(shown).toContain("delete mode 100644 docs/page-0.md");
    expect(shown).toMatch(/-page 0\n/);
    expect(mainOf(canonical)).toBe(before);
    const done = await approveGate(env.paths, gate, { by: "test" });
    expect(done).toMatchObject({ state: "executed", result: { status: "landed", deletions: 30 } });
    expect(mainOf(canonical)).toBe(head);
  });

  it("a push that changes .roster/ (what the project's workers install) always gates, whatever trust says", async () => {
    const run = await newRun();
    mkdirSync(join(run.clone, ".roster"), { recursive: true });
    writeFileSync(join(run.clone, ".roster/toolchain.toml"), 'npm = ["left-pad"]\n');
    writeFileSync(join(run.clone, "notes.md"), "why\n");
    const head = commitAndBundle(run.clone, run.runId, "tools for next time");
    const before = mainOf(canonical);
    const held = await run.push(head);
    expect(held.status, JSON.stringify(held.body)).toBe(202); // trust = "auto", and still held
    const gate = findGate(env.paths, String(held.body.gate_id));
    expect(gate.state).toBe("pending");
    expect(mainOf(canonical)).toBe(before);
    const filed = readJournal(env.paths, "elf").find(
      (event) => event.kind === "gate-filed" && event.gate_id === gate.id,
    );
    expect(JSON.stringify(filed)).toContain(
      "it changes .roster/toolchain.toml: what the project's workers install, which always waits for a human",
    );
    const done = await approveGate(env.paths, gate, { by: "test" });
    expect(done).toMatchObject({ state: "executed", result: { status: "landed" } });
    expect(mainOf(canonical)).toBe(head);
    // a later push that leaves .roster/ alone is trusted as before
    const next = await newRun();
    writeFileSync(join(next.clone, "more.md"), "more\n");
    const plain = commitAndBundle(next.clone, next.runId, "more notes");
    expect((await next.push(plain)).status).toBe(200);
  });

  it("two pushes checked against the same main: the lane lands one, the other is told it is stale; no commit is lost", async () => {
    const a = await newRun();
    const b = await newRun();
    writeFileSync(join(a.clone, "a.md"), "a\n");
    writeFileSync(join(b.clone, "b.md"), "b\n");
    const headA = commitAndBundle(a.clone, a.runId, "a");
    const headB = commitAndBundle(b.clone, b.runId, "b");
    // Which status the loser gets depends on when it was checked: a proposal checked after the
    // other landed is refused at once (409, as above); one checked before it passes, is held,
    // and finds main moved only in the lane (land's compare-and-swap), which the action host
    // answers as a failed run of the executor (502). Left to the scheduler, either can happen.
    // So the lane is held here, as another landing would hold it, until both proposals have
    // passed their checks and are held at their incoming refs: both were checked against the
    // same main, and the lane alone decides.
    const lane = laneLock(env.paths, "app");
    mkdirSync(dirname(lane), { recursive: true });
    const held = [incomingRef("elf", a.runId, headA), incomingRef("elf", b.runId, headB)];
    const bothHeld = () => {
      const refs = sh(canonical, ["for-each-ref", "--format=%(refname)", "refs/roster/incoming"]);
      return held.every((ref) => refs.split("\n").includes(ref));
    };
    const pushes = await withFileLock(lane, "the test's landing", async () => {
      const replies = Promise.all([a.push(headA), b.push(headB)]);
      for (let i = 0; i < 600 && !bothHeld(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(bothHeld(), "both proposals passed their checks and are held").toBe(true);
      // wrapped: returned bare, the lock would be held until they answer, which needs it
      return { replies };
    });
    const [ra, rb] = await pushes.replies;
    const loser = ra.status === 200 ? { reply: rb, run: b } : { reply: ra, run: a };
    expect([ra.status, rb.status].sort()).toEqual([200, 502]);
    const winner = ra.status === 200 ? headA : headB;
    expect(String(loser.reply.body.error)).toContain(`stale: main is now ${winner}`);
    expect(mainOf(canonical)).toBe(winner);
    // the loser rebases and lands: both commits are on main
    sh(loser.run.clone, ["fetch", "-q", "origin"]);
    sh(loser.run.clone, ["rebase", "-q", "origin/main"]);
    const rebased = sh(loser.run.clone, ["rev-parse", "HEAD"]).trim();
    bundle(loser.run.clone, loser.run.runId);
    expect((await loser.run.push(rebased)).status).toBe(200);
    const subjects = sh(canonical, ["log", "--format=%s", "-2", "main"]).trim().split("\n");
    expect(subjects.sort()).toEqual(["a", "b"]);
  });
});

describe("hostile pushes are refused with a reason, and nothing lands", () => {
  const refusedWith = async (prepare: (clone: string, runId: string) => string, reason: RegExp) => {
    const run = await newRun();
    const before = mainOf(canonical);
    const head = prepare(run.clone, run.runId);
    const reply = await run.push(head);
    expect(reply.status, JSON.stringify(reply.body)).toBe(409);
    expect(String(reply.body.error)).toMatch(reason);
    expect(mainOf(canonical)).toBe(before);
    expect(sh(canonical, ["for-each-ref", "refs/roster/incoming"])).toBe("");
    return String(reply.body.error);
  };
  /** A commit on the run branch whose tree gains `entry` (an ls-tree line) at the top. */
  const craftedTree = (clone: string, runId: string, entry: (blob: string) => string) => {
    const blob = sh(clone, ["hash-object", "-w", "--stdin"], "payload\n").trim();
    const top = sh(clone, ["ls-tree", "HEAD"]);
    const tree = sh(clone, ["mktree"], `${top}${entry(blob)}\n`).trim();
    const commit = sh(clone, ["commit-tree", tree, "-p", "HEAD", "-m", "crafted"]).trim();
    sh(clone, ["update-ref", `refs/heads/run/${runId}`, commit]);
    bundle(clone, runId);
    return commit;
  };

  it("a symlink", async () => {
    await refusedWith((clone, runId) => {
      symlinkSync("/etc/passwd", join(clone, "passwd.md"));
      return commitAndBundle(clone, runId);
    }, /"passwd.md" is a symlink/);
  });

  it("an executable", async () => {
    await refusedWith((clone, runId) => {
      writeFileSync(join(clone, "run.sh"), "#!/bin/sh\necho hi\n");
      chmodSync(join(clone, "run.sh"), 0o755);
      return commitAndBundle(clone, runId);
    }, /"run.sh" is executable/);
  });

  it("a path with ..", async () => {
    await refusedWith(
      (clone, runId) => craftedTree(clone, runId, (blob) => `100644 blob ${blob}\t..`),
      /objects fail git's checks|'\.\.'/,
    );
  });

  it("a .git/hooks file", async () => {
    await refusedWith((clone, runId) => {
      const blob = sh(clone, ["hash-object", "-w", "--stdin"], "#!/bin/sh\nexit 0\n").trim();
      const hooks = sh(clone, ["mktree"], `100755 blob ${blob}\tpost-checkout\n`).trim();
      const dotgit = sh(clone, ["mktree"], `040000 tree ${hooks}\thooks\n`).trim();
      return craftedTree(clone, runId, () => `040000 tree ${dotgit}\t.git`);
    }, /objects fail git's checks|inside \.git/);
  });

  it("a 200 MB blob", async () => {
    await refusedWith((clone, runId) => {
      writeFileSync(join(clone, "huge.md"), Buffer.alloc(200 * 1024 * 1024, 0x61));
      return commitAndBundle(clone, runId);
    }, /"huge.md" is 209715200 bytes, over the per-file limit of 10485760/);
  }, 60_000);

  it("a key-shaped secret, named by file and rule but never shown", async () => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const error = await refusedWith((clone, runId) => {
      writeFileSync(join(clone, "deploy.md"), `# deploy\n\n${pem}`);
      return commitAndBundle(clone, runId);
    }, /"deploy.md" line 3 looks like a secret \(privatekey\)/);
    expect(error).not.toContain("BEGIN PRIVATE KEY");
  });

  it("a secret added and removed again in the same push still counts", async () => {
    await refusedWith((clone, runId) => {
      writeFileSync(join(clone, "cfg.md"), `token: ghp_${"A1b2C3d4".repeat(4)}abcd\n`);
      sh(clone, ["add", "-A"]);
      sh(clone, ["commit", "-q", "-m", "oops"]);
      writeFileSync(join(clone, "cfg.md"), "token: (in the vault)\n");
      return commitAndBundle(clone, runId, "fix");
    }, /"cfg.md" line 1 looks like a secret \(github\)/);
  });

  it("a bundle whose refs point outside run/<id>", async () => {
    await refusedWith((clone, runId) => {
      writeFileSync(join(clone, "x.md"), "x\n");
      sh(clone, ["add", "-A"]);
      sh(clone, ["commit", "-q", "-m", "x"]);
      sh(clone, ["branch", "-f", "main", "HEAD"]);
      bundle(clone, runId, "origin/main..refs/heads/main");
      return sh(clone, ["rev-parse", "HEAD"]).trim();
    }, /must carry exactly refs\/heads\/run\/.+; it names refs\/heads\/main/);
  });

  it("a non-fast-forward", async () => {
    await refusedWith((clone, runId) => {
      const tree = sh(clone, ["rev-parse", "HEAD^{tree}"]).trim();
      const orphan = sh(clone, ["commit-tree", tree, "-m", "rewritten history"]).trim();
      sh(clone, ["update-ref", `refs/heads/run/${runId}`, orphan]);
      bundle(clone, runId, `refs/heads/run/${runId}`);
      return orphan;
    }, /stale: main is now [0-9a-f]{40}/);
  });

  it("a bundle that is a symlink to a host file", async () => {
    await refusedWith((clone, runId) => {
      writeFileSync(join(clone, "y.md"), "y\n");
      const head = commitAndBundle(clone, runId);
      sh(clone, [
        "bundle",
        "create",
        "-q",
        "/tmp/elsewhere.bundle",
        `origin/main..refs/heads/run/${runId}`,
      ]);
      const file = join(clone, ".git/roster-push.bundle");
      rmSync(file);
      symlinkSync("/tmp/elsewhere.bundle", file);
      return head;
    }, /the bundle is a symlink/);
  });
});

describe("bad input gets a clear answer, and nothing is executed", () => {
  it("an unknown repo, a repo that is not gated, an empty push", async () => {
    const run = await newRun();
    const main = mainOf(canonical);
    const unknown = await run.push(main, {}, "nope");
    expect(unknown.status).toBe(409);
    expect(unknown.body.error).toBe('payload.repo: no repo named "nope" is granted to elf');
    const readOnly = await run.push(main, {}, "docs");
    expect(readOnly.body.error).toBe(
      'payload.repo: "docs" is not writable: its connection does not say write = "gated"',
    );
    bundle(run.clone, run.runId, `refs/heads/run/${run.runId}`);
    const empty = await run.push(main);
    expect(empty.status).toBe(409);
    expect(empty.body.error).toBe(`nothing to push: ${main} is already on main`);
    const badHead = await run.push("not-a-sha");
    expect(badHead.status).toBe(400);
    expect(String(badHead.body.error)).toMatch(/^bad envelope: payload\.head/);
    // another worker's run can't push from elf's clone, nor name a repo it isn't granted
    const imp = await env.token("imp", run.runId);
    const stolen = await submitAction(env, imp, {
      intent: "repo-push",
      payload: { repo: "app", head: main },
    });
    expect(stolen.body.error).toBe('payload.repo: no repo named "app" is granted to imp');
    expect(mainOf(canonical)).toBe(main);
    const refusals = readJournal(env.paths, "elf", 100).filter(
      (event) => event.kind === "action-refused" && event.intent === "repo-push",
    );
    expect(refusals.length).toBeGreaterThanOrEqual(3);
  });
});
