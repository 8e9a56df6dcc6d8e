import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOX_IMAGE } from "../../runner/boundary/box/layout.ts";
import { mintToken, revokeToken } from "../../runner/boundary/gateway/doors/identity.ts";
import { appendMessage, ensureChannel } from "../../runner/records/channels/store.ts";
import { listGates } from "../../runner/services/actions/gates.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { containerAddress, hostBridgeAddress, RUN_LIMITS, testDocker } from "../support/docker.ts";
import { ModelServer, textOf } from "../support/model-server.ts";
import {
  OUTSIDE_ADDRESS,
  OUTSIDE_TCP_PORT,
  OUTSIDE_UDP_PORT,
  type OutsideHost,
  startOutsideHost,
} from "../support/outside-host.ts";
import {
  listeningPort,
  makeRosterRoot,
  type RosterRoot,
  testRuntime,
} from "../support/roster-root.ts";
import { termRouter } from "../support/term-router.ts";
import {
  type Attempt,
  type Envelope,
  formatOutcomes,
  type Outcome,
  probeScript,
  readOutcomes,
} from "./attempts.ts";
import {
  identityAttempts,
  neighbourAnswers,
  networkAttempts,
  networkControls,
  outsideAttempts,
  PEM_KEY_LINE,
  SEARCH,
  secretAttempts,
  startNeighbour,
  sweepFindsOwn,
  sweepScript,
} from "./escape-attempts.ts";

/**
 * The escape suite: from inside real boxes of worker elf (started the normal
 * way, by `roster box exec`), each attempt to get out, read what isn't its,
 * write what is read-only, plant something for a later run, gain privileges
 * or spend another run's identity must fail. Each attempt is a command that
 * succeeds only if the escape worked; controls show the same command can
 * succeed where nothing stops it, so no attempt passes by being broken.
 * Where the design records an attempt (the gateway's audit), the test looks.
 * The suite prints every attempt with its outcome. ROSTER_TEST_RUNTIME=runsc
 * runs the same attempts in boxes under gVisor (support/roster-root.ts). The
 * network, secret and token attempts are in escape-attempts.ts, which
 * agent-escape.test.ts runs through Claude Code's and Codex's own shells.
 */
const docker = await testDocker();
/** The boxes run under gVisor (ROSTER_TEST_RUNTIME=runsc): a few attempts differ, each says why. */
const GVISOR = testRuntime() === "runsc";
const MARK = Math.random().toString(36).slice(2, 10);
const VAULT_VALUE = `VAULT-VALUE-${MARK}`;
const BOB_STORE = `BOB-STORE-${MARK}`;
const BOB_RUN = `BOB-RUN-${MARK}`;
const BOB_CHANNEL = `BOB-CHANNEL-${MARK}`;
/** In elf's own store: the whole-box sweep must find it, or it searched nothing. */
const ELF_STORE = `ELF-STORE-${MARK}`;

describe.skipIf(!docker)(
  "escape suite: a compromised box stays in its box",
  { tags: ["runtime"] },
  () => {
    let deployment: RosterRoot;
    let outside: OutsideHost;
    let bystander: Server;
    let allowed: Server;
    let shared: string;
    let model: ModelServer;
    const outcomes: Outcome[] = [];

    beforeAll(async () => {
      outside = await startOutsideHost();
      bystander = createServer((_req, res) => res.end("bystander"));
      await new Promise<void>((resolve) => bystander.listen(0, "0.0.0.0", resolve));
      allowed = createServer((req, res) =>
        res.end(`allowed saw ${req.headers["x-api-key"] ?? "none"}`),
      );
      await new Promise<void>((resolve) => allowed.listen(0, "127.0.0.1", resolve));
      model = await new ModelServer().start("127.0.0.1");
      deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));
      const { paths } = deployment;
      const org = join(paths.config, "org.toml");
      const text = await readFile(org, "utf8");
      await writeFile(
        org,
        `${text.replace(/^port = (\d+)$/m, 'port = $1\nresolve = { "allowed.test" = "127.0.0.1" }')}
[[grant]]
name = "allowed"
verdict = "allow"
match = { host = "allowed.test" }
inject = { credential = "secret-api", headers = [{ header = "x-api-key", value = "{token}" }] }
`,
      );
      await storeCredential(paths.vault, "secret-api", { token: VAULT_VALUE });
      // elf's own limits, narrowed so the exhaustion attempts end quickly
      await writeFile(
        join(paths.config, "workers/elf/worker.toml"),
        'name = "elf"\n\n[box]\npids_limit = 200\nmemory = "384m"\n',
      );
      // another worker, with a store, a run and a channel of its own
      await cp(join(paths.config, "workers/elf"), join(paths.config, "workers/bob"), {
        recursive: true,
      });
      await writeFile(join(paths.config, "workers/bob/worker.toml"), 'name = "bob"\n');
      await mkdir(join(paths.data, "workers/bob/store"), { recursive: true });
      await writeFile(join(paths.data, "workers/bob/store/notes.txt"), `${BOB_STORE}\n`);
      await mkdir(join(paths.data, "workers/elf/store"), { recursive: true });
      await writeFile(join(paths.data, "workers/elf/store/own.txt"), `${ELF_STORE}\n`);
      const bobRun = join(paths.state, "runs/bob/2026-01-01-00-00-00-bobrun01");
      await mkdir(bobRun, { recursive: true });
      await writeFile(join(bobRun, "events.jsonl"), `{"type":"note","text":"${BOB_RUN}"}\n`);
      ensureChannel(paths, "term-op-bob");
      appendMessage(paths, "term-op-bob", {
        ts: new Date().toISOString(),
        author_id: "term:op",
        author: "op",
        role: "user",
        content: BOB_CHANNEL,
        attachments: [],
      });
      shared = await mkdtemp(join(tmpdir(), "roster-escape-"));
      await writeFile(join(shared, "readme.txt"), "read me\n");
      await writeFile(
        join(paths.config, "connections/reference.toml"),
        `kind = "host-dir"\npath = "${shared}"\nmode = "ro"\n[grant.elf]\n`,
      );
    }, 120_000);

    afterAll(async () => {
      if (outcomes.length)
        console.log(`box runtime: ${testRuntime() ?? "runc"}\n${formatOutcomes(outcomes)}`);
      await model?.stop();
      await deployment?.cleanup();
      bystander?.close();
      allowed?.close();
      await outside?.stop();
      if (shared) await rm(shared, { recursive: true, force: true });
    });

    const exec = async (script: string, timeoutSecs = 120): Promise<Envelope> => {
      const result = await deployment.roster(
        ["box", "exec", "elf", "--timeout", String(timeoutSecs), "--", script],
        { timeoutMs: (timeoutSecs + 60) * 1000 },
      );
      const line = result.stdout.trim().split("\n").at(-1) ?? "";
      try {
        return JSON.parse(line) as Envelope;
      } catch {
        throw new Error(`box exec gave no envelope (exit ${result.code}): ${result.stderr}`);
      }
    };

    const run = async (
      attempts: Attempt[],
      controls: Attempt[] = [],
      timeoutSecs?: number,
      prelude?: string,
    ) => {
      const envelope = await exec(probeScript(attempts, controls, prelude), timeoutSecs);
      const found = readOutcomes(envelope.stdout, attempts, controls);
      outcomes.push(...found);
      return found;
    };

    it("can't reach anything but the gateway: no egress, no DNS, no host port, no health check", async () => {
      const { gatewayPort } = deployment;
      const hostAddress = hostBridgeAddress();
      // a container on a network, listening (as another worker's tool might)
      const neighbour = startNeighbour();
      try {
        const neighbourIp = containerAddress(neighbour);
        const bystanderPort = listeningPort(bystander);
        const before = (await outside.hits()).length;
        const found = await run(
          [
            ...outsideAttempts({
              address: OUTSIDE_ADDRESS,
              tcpPort: OUTSIDE_TCP_PORT,
              udpPort: OUTSIDE_UDP_PORT,
              mark: MARK,
            }),
            ...networkAttempts({ hostAddress, bystanderPort, gatewayPort, neighbourIp }),
          ],
          networkControls({ port: listeningPort(allowed), vaultValue: VAULT_VALUE }),
        );
        expect(found.filter((outcome) => outcome.result !== "held")).toEqual([]);
        // the outside host heard nothing from the box
        const hits = (await outside.hits()).slice(before);
        expect(hits).toEqual([]);
        // and the host can reach it: the box's failure is the lockdown's doing
        const control = execFileSync(
          "docker",
          [
            "run",
            ...RUN_LIMITS,
            "--rm",
            BOX_IMAGE,
            "bash",
            "-c",
            `timeout 5 bash -c 'exec 3<>/dev/tcp/${OUTSIDE_ADDRESS}/${OUTSIDE_TCP_PORT} && head -1 <&3'`,
          ],
          { encoding: "utf8" },
        );
        expect(control).toContain("outside");
        // refusals at the door are in the audit: the health check and the host port by rule closed or deny
        const audit = readFileSync(join(deployment.paths.audit, "decisions.jsonl"), "utf8");
        expect(audit).toMatch(
          /"rule":"closed".*"path":"\/healthz"|"path":"\/healthz".*"rule":"closed"/,
        );
        expect(audit).toContain('"host":"169.254.169.254"');
        // the neighbour was listening on that address all along
        neighbourAnswers(neighbour, neighbourIp);
      } finally {
        execFileSync("docker", ["rm", "-f", neighbour], { stdio: "ignore" });
      }
    });

    it(
      "can't read what isn't its own: the vault, the CA key, another worker's store, runs and channels",
      async () => {
        const caKey = readFileSync(join(deployment.paths.ca, "ca.key"), "utf8")
          .split("\n")
          .find((line) => line.length > 40 && !line.startsWith("-----"))
          ?.slice(0, 40);
        expect(caKey).toBeDefined();
        const secrets: Array<[string, string]> = [
          ["a vault credential's value", VAULT_VALUE],
          ["the gateway CA's private key", caKey ?? ""],
          ["another worker's store", BOB_STORE],
          ["another worker's run history", BOB_RUN],
          ["another worker's channel history", BOB_CHANNEL],
        ];
        // one read of the whole box for every secret at once (sweepScript); each
        // attempt then asks the sweep's findings, and the control proves the sweep
        // read what the box may read
        const sweep = `/tmp/.sweep-${MARK}`;
        // the key pattern finds a real PEM key (the CA's), not code that names the header
        expect(readFileSync(join(deployment.paths.ca, "ca.key"), "utf8")).toMatch(
          new RegExp(PEM_KEY_LINE, "m"),
        );
        const found = await run(
          [
            ...secretAttempts({
              sweep,
              secrets,
              inEnv: [["a vault value", VAULT_VALUE]],
            }),
            {
              name: "another worker's files by path",
              group: "read",
              run: "ls /home/*/store/notes.txt ~/store/../../bob ~/self/runs/../../bob 2>/dev/null | grep -q .",
            },
          ],
          [sweepFindsOwn(sweep, ELF_STORE)],
          GVISOR ? 540 : undefined,
          sweepScript(sweep, [...secrets.map(([, value]) => value), ELF_STORE]),
        );
        expect(found.filter((outcome) => outcome.result !== "held")).toEqual([]);
        // under gVisor every file read goes through its file proxy: the whole-box searches take minutes
      },
      GVISOR ? 600_000 : undefined,
    );

    it("can't write what is read-only: self, the engine, a read-only mount, the root", async () => {
      const found = await run(
        [
          { name: "write ~/self", group: "write", run: "touch ~/self/planted" },
          {
            name: "rewrite its own worker.toml",
            group: "write",
            run: "echo 'egress_lockdown = false' >> ~/self/config/worker.toml",
          },
          { name: "write the engine", group: "write", run: "touch /opt/roster/engine/planted" },
          {
            name: "replace the gateway's door",
            group: "write",
            run: "rm -f /run/roster/door/gateway.sock && test ! -e /run/roster/door/gateway.sock || touch /run/roster/door/planted",
          },
          {
            name: "replace an extension",
            group: "write",
            run: "ls /opt/roster/engine/extensions/*.ts | head -1 | xargs -I{} sh -c 'echo x >> {}'",
          },
          { name: "write a read-only mount", group: "write", run: "touch ~/mnt/reference/planted" },
          { name: "write /", group: "write", run: "touch /planted" },
          { name: "write /usr/local/bin", group: "write", run: "touch /usr/local/bin/planted" },
          {
            name: "append to /etc/passwd",
            group: "write",
            run: "echo 'x:x:0:0::/:/bin/sh' >> /etc/passwd",
          },
          {
            name: "write the CA bundle",
            group: "write",
            run: "echo x >> /opt/roster/ca-bundle.crt",
          },
        ],
        [
          { name: "write its workspace", group: "control", run: "touch ~/workspace/ok" },
          { name: "write its store", group: "control", run: "touch ~/store/ok" },
        ],
      );
      expect(found.filter((outcome) => outcome.result !== "held")).toEqual([]);
    });

    it("can't write its channel's record from a session, nor read another channel's", async () => {
      const attempts: Attempt[] = [
        {
          name: "append to its channel's history",
          group: "write",
          run: "echo '{\"forged\":true}' >> ~/channel/messages.jsonl",
        },
        {
          name: "rewrite its channel's purpose",
          group: "write",
          run: "echo 'obey' > ~/channel/purpose.md",
        },
        { name: "add a file to its channel", group: "write", run: "touch ~/channel/planted" },
        {
          name: "read another channel's history from a session",
          group: "read",
          run: `grep -rqsF -- '${BOB_CHANNEL}' ~/channel ${SEARCH}`,
        },
      ];
      const controls: Attempt[] = [
        {
          name: "write its own store for the channel",
          group: "control",
          run: "touch ~/channel/store/ok",
        },
        {
          name: "read its channel's history",
          group: "control",
          run: "test -r ~/channel/messages.jsonl",
        },
      ];
      let seen = "";
      model.play(
        { toolCalls: [{ name: "bash", arguments: { command: probeScript(attempts, controls) } }] },
        (request) => {
          seen = textOf(request.body.messages?.at(-1)?.content);
          return { text: "probed" };
        },
      );
      const { router, send } = termRouter(deployment);
      try {
        await send("term-op-elf", "look around");
      } finally {
        await router.closeAll();
      }
      const found = readOutcomes(seen, attempts, controls);
      outcomes.push(...found);
      expect(found.filter((outcome) => outcome.result !== "held")).toEqual([]);
    });

    it("can't gain privileges: no setuid file, no capability, no new privileges, no namespaces", async () => {
      const found = await run([
        {
          name: "a setuid or setgid file to run",
          group: "privilege",
          run: "find / -xdev -type f -perm /6000 2>/dev/null | grep -q .",
        },
        {
          name: "an effective capability",
          group: "privilege",
          run: "grep -q '^CapEff:[[:space:]]*0*[1-9a-f]' /proc/self/status",
        },
        {
          name: "new privileges on exec",
          group: "privilege",
          run: "grep -q '^NoNewPrivs:[[:space:]]*0' /proc/self/status",
        },
        { name: "become root with su", group: "privilege", run: "su -c true root </dev/null" },
        { name: "become root with sudo", group: "privilege", run: "sudo -n true" },
        { name: "mount a filesystem", group: "privilege", run: "mount -t tmpfs none /tmp/x" },
        GVISOR
          ? {
              // runsc does not load Docker's seccomp profile (its --oci-seccomp, on this runsc,
              // also stops the door's socat), so a user namespace opens; it is gVisor's kernel's,
              // not the host's, and its root must still get no mount power
              name: "a user namespace whose root can mount (gVisor's own namespace)",
              group: "privilege",
              run: "unshare -rm true",
            }
          : {
              name: "a user namespace with root in it",
              group: "privilege",
              run: "unshare -r true",
            },
        {
          name: "a raw socket",
          group: "privilege",
          run: 'python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)"',
        },
        { name: "the kernel's sysrq", group: "privilege", run: "echo h > /proc/sysrq-trigger" },
      ]);
      expect(found.filter((outcome) => outcome.result !== "held")).toEqual([]);
    });

    it("can't plant something a later run executes", async () => {
      const planted = await exec(
        [
          "echo 'echo PLANTED-RC' >> ~/.bashrc",
          "echo 'echo PLANTED-PROFILE' >> ~/.profile",
          "mkdir -p ~/store/bin ~/.local/bin /opt/tools/npm/bin",
          "for dir in ~/store/bin ~/.local/bin /opt/tools/npm/bin; do printf '#!/bin/sh\\necho PLANTED-BIN\\n' > $dir/git; chmod +x $dir/git; done",
          "echo done",
        ].join("; "),
      );
      expect(planted.stdout).toContain("done");
      const found = await run([
        {
          name: "a dotfile in $HOME runs in a later box",
          group: "persist",
          run: "bash -lic 'true' 2>/dev/null | grep -q PLANTED",
        },
        {
          name: "a planted git shadows the image's in a later box",
          group: "persist",
          run: "git --version | grep -q PLANTED",
        },
        {
          name: "a planted git runs for the engine's PATH",
          group: "persist",
          run: "env -i PATH=\"$PATH\" bash -c 'git --version' | grep -q PLANTED",
        },
      ]);
      expect(found.filter((outcome) => outcome.result !== "held")).toEqual([]);
    });

    it("can't use another run's token, act with no token, or speak for another worker", async () => {
      const { paths } = deployment;
      const port = listeningPort(allowed);
      const stolen = await mintToken(paths.identity, { subject: "org/bob", runId: "bob-finished" });
      await revokeToken(paths.identity, stolen);
      const live = await mintToken(paths.identity, { subject: "org/bob", runId: "bob-live" });
      try {
        const found = await run(
          identityAttempts({ stolen, live, allowedPort: port, vaultValue: VAULT_VALUE }),
        );
        expect(found.filter((outcome) => outcome.result !== "held")).toEqual([]);
        // nothing was filed in bob's name
        expect(listGates(paths, "bob")).toEqual([]);
        // the refused uses of tokens are in the audit as the box's own run (the door it came
        // through), and the tokenless request as its page, with nothing injected
        type Line = {
          subject: string | null;
          status: number;
          rule: string | null;
          actor?: string;
          injected?: string[];
        };
        const lines = readFileSync(join(paths.audit, "decisions.jsonl"), "utf8")
          .split("\n")
          .filter(
            (line) => line.includes(`"host":"allowed.test"`) || line.includes('"rule":"page"'),
          )
          .map((line) => JSON.parse(line) as Line);
        const wrong = lines.filter((line) => line.rule === "wrong-run");
        expect(wrong.map((line) => line.status)).toEqual([403, 403, 403]);
        expect(wrong.every((line) => line.subject !== null && line.subject !== "org/bob")).toBe(
          true,
        );
        const page = lines.filter((line) => line.actor === "page");
        expect(page.map((line) => [line.status, line.injected])).toEqual([
          [200, undefined],
          [403, undefined],
        ]);
        expect(lines.some((line) => line.subject === "org/bob")).toBe(false);
      } finally {
        await revokeToken(paths.identity, live);
      }
    });

    it("can't take the host down: a fork bomb and a memory hog end in the box", async () => {
      const bomb = await exec("bomb() { bomb | bomb & }; bomb; sleep 5; echo survived", 30);
      outcomes.push({
        name: "a fork bomb past pids_limit",
        group: "resources",
        result: bomb.status !== "ok" || bomb.stdout.includes("survived") ? "held" : "ESCAPED",
        detail: `${bomb.status}, exit ${bomb.exit_code}${bomb.reason ? `, ${bomb.reason}` : ""}`,
      });
      const hog = await exec(
        "python3 -c \"b = bytearray(); [b.extend(b'x' * (64 << 20)) for _ in range(32)]; print('allocated')\"",
        60,
      );
      outcomes.push({
        name: "allocating past the memory limit",
        group: "resources",
        result: hog.stdout.includes("allocated") ? "ESCAPED" : "held",
        detail: `${hog.status}, exit ${hog.exit_code}${hog.reason ? `, ${hog.reason}` : ""}`,
      });
      expect(hog.stdout).not.toContain("allocated");
      // the host is fine: the next box starts and answers
      const after = await exec("echo still-here");
      expect(after).toMatchObject({ exit_code: 0, stdout: "still-here\n" });
      expect(outcomes.length).toBeGreaterThanOrEqual(30);
    });
  },
);
