import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import { mintToken, revokeToken } from "../../runner/boundary/gateway/doors/identity.ts";
import { CertificateAuthority } from "../../runner/boundary/gateway/trust/ca.ts";
import { SENTINEL } from "../../runner/ground/config/sentinel.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { type AgentDeployment, agentDeployment } from "../support/agent-deployment.ts";
import { AnthropicModelServer } from "../support/anthropic-model-server.ts";
import { containerAddress, hostBridgeAddress, testDocker } from "../support/docker.ts";
import { outputText, ResponsesModelServer } from "../support/responses-model-server.ts";
import { latestRecord, listeningPort } from "../support/roster-root.ts";
import { type Attempt, formatOutcomes, probeScript, readOutcomes } from "./attempts.ts";
import {
  identityAttempts,
  neighbourAnswers,
  networkAttempts,
  networkControls,
  PEM_KEY_LINE,
  secretAttempts,
  startNeighbour,
  sweepFindsOwn,
  sweepScript,
} from "./escape-attempts.ts";

/**
 * The escape suite's network and credential attempts (escape-attempts.ts),
 * run by a worker whose agent is Claude Code or Codex, through the agent's
 * own shell tool in a real run: the model (a stand-in) calls the tool once
 * with the whole probe, and the verdicts come back in the tool result the
 * agent sends it. A box running another agent is as shut as pi's: it reaches
 * nothing but its door, holds no vault value and no model key (its key
 * variable holds roster's sentinel), and can't spend another run's token.
 *
 * Left out: the attempts aimed at the outside host (outsideAttempts: TCP,
 * HTTP, UDP and ICMP to 198.51.100.2), which listens on fixed addresses that
 * one suite at a time owns (escape.test.ts, solo in scripts/engine-suites.mjs);
 * aimed at a public address instead they would fail for want of a listener
 * and prove nothing. No egress is still shown: the box has no interface but
 * loopback (no packet of any protocol leaves it), names don't resolve, and a
 * port listening on every host address, the gateway's own port, the host's
 * bridge address and a container on Docker's bridge (checked to answer from
 * beside it) are all out of reach.
 */
const docker = await testDocker();
const MARK = Math.random().toString(36).slice(2, 10);
const VAULT_VALUE = `VAULT-VALUE-${MARK}`;
/** In elf's own store: the whole-box sweep must find it, or it searched nothing. */
const ELF_STORE = `ELF-STORE-${MARK}`;
/** Codex's shell stops waiting for a command at its yield time, 30 s at most: the probe ends well within. */
const CODEX_YIELD_MS = 30_000;

/** The provider's stand-in, scripted for one shell call and a closing text turn. */
interface StandIn {
  baseUrl: string;
  /** Plays the call of the agent's shell tool with `script`, then "probed". */
  probe(script: string): void;
  /** The text of the tool result the agent sent back. */
  result(): string;
  stop(): Promise<void>;
}

interface AgentCase {
  agent: "claude" | "codex";
  title: string;
  provider: "anthropic" | "openai";
  model: string;
  /** The provider's real key, in the vault; the box's key variable holds the sentinel. */
  key: string;
  keyEnv: string;
  extraOrg: string;
  standIn(): Promise<StandIn>;
}

const CASES: AgentCase[] = [
  {
    agent: "claude",
    title: "Claude Code",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    key: `sk-ant-api03-MODEL-KEY-${MARK}`,
    keyEnv: "ANTHROPIC_API_KEY",
    extraOrg: "",
    standIn: async () => {
      const server = await new AnthropicModelServer().start("127.0.0.1");
      let seen = "";
      return {
        baseUrl: server.baseUrl("127.0.0.1"),
        probe: (script) =>
          server.play({ toolUses: [{ name: "Bash", input: { command: script } }] }, () => {
            seen = server.toolResults().at(-1)?.content ?? "";
            return { text: "probed" };
          }),
        result: () => seen,
        stop: () => server.stop(),
      };
    },
  },
  {
    agent: "codex",
    title: "Codex",
    provider: "openai",
    model: "gpt-5.5",
    key: `sk-proj-MODEL-KEY-${MARK}`,
    keyEnv: "OPENAI_API_KEY",
    // roster ships no price for this model: the operator's own
    extraOrg: '\n[[budget.price]]\nmodel = "gpt-5*"\ninput = 1.25\noutput = 10\n',
    standIn: async () => {
      const server = await new ResponsesModelServer().start("127.0.0.1");
      let seen = "";
      return {
        baseUrl: server.baseUrl("127.0.0.1"),
        probe: (script) =>
          server.play(
            {
              toolCalls: [
                {
                  name: "exec_command",
                  arguments: { cmd: script, yield_time_ms: CODEX_YIELD_MS },
                },
              ],
            },
            (request) => {
              const outputs = (request.body.input ?? []).filter(
                (item) => item.type === "function_call_output",
              );
              seen = outputText(outputs.at(-1)?.output);
              return { text: "probed" };
            },
          ),
        result: () => seen,
        stop: () => server.stop(),
      };
    },
  },
];

/**
 * `value` in the environment of any process in the box: an agent may give
 * its shell less than its own environment (Codex leaves out names with KEY,
 * SECRET or TOKEN in them), and the agent's own is as readable to the box.
 */
const inAnyProcess = (what: string, value: string): Attempt => ({
  name: `${what} in any process's environment`,
  group: "read",
  run: `cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -qF -- '${value}'`,
});

describe.skipIf(!docker)("escape attempts through another agent's shell", () => {
  let bystander: Server;
  let allowed: Server;
  let neighbour: string;
  let neighbourIp: string;

  beforeAll(async () => {
    bystander = createServer((_req, res) => res.end("bystander"));
    await new Promise<void>((resolve) => bystander.listen(0, "0.0.0.0", resolve));
    allowed = createServer((req, res) =>
      res.end(`allowed saw ${req.headers["x-api-key"] ?? "none"}`),
    );
    await new Promise<void>((resolve) => allowed.listen(0, "127.0.0.1", resolve));
    neighbour = startNeighbour();
    neighbourIp = containerAddress(neighbour);
  }, 120_000);

  afterAll(() => {
    bystander?.close();
    allowed?.close();
    if (neighbour) execFileSync("docker", ["rm", "-f", neighbour], { stdio: "ignore" });
  });

  describe.each(CASES)("$title", (agentCase) => {
    let standIn: StandIn;
    let agent: AgentDeployment;

    beforeAll(async () => {
      standIn = await agentCase.standIn();
      agent = await agentDeployment({
        agent: agentCase.agent,
        provider: agentCase.provider,
        model: agentCase.model,
        baseUrl: standIn.baseUrl,
        key: agentCase.key,
        extraOrg: `${agentCase.extraOrg}
[[grant]]
name = "allowed"
verdict = "allow"
match = { host = "allowed.test" }
inject = { credential = "secret-api", headers = [{ header = "x-api-key", value = "{token}" }] }
`,
      });
      const { paths } = agent.deployment;
      const orgFile = join(paths.config, "org.toml");
      const org = await readFile(orgFile, "utf8");
      const docsOnly = 'resolve = { "docs.test" = "127.0.0.1" }';
      if (!org.includes(docsOnly)) throw new Error(`org.toml has no ${docsOnly} to extend`);
      await writeFile(
        orgFile,
        org.replace(
          docsOnly,
          'resolve = { "docs.test" = "127.0.0.1", "allowed.test" = "127.0.0.1" }',
        ),
      );
      await storeCredential(paths.vault, "secret-api", { token: VAULT_VALUE });
      await mkdir(join(paths.data, "workers/elf/store"), { recursive: true });
      await writeFile(join(paths.data, "workers/elf/store/own.txt"), `${ELF_STORE}\n`);
      // the door's CA, made now as its first start would: its key is one of the secrets sought
      await CertificateAuthority.open(paths.ca);
    }, 120_000);

    afterAll(async () => {
      await standIn?.stop();
      await agent?.stop();
    });

    it("reaches nothing but its door, holds no secret, and spends no other run's token", async () => {
      const { deployment } = agent;
      const { paths } = deployment;
      const caText = readFileSync(join(paths.ca, "ca.key"), "utf8");
      // the key pattern finds a real PEM key (the CA's), not code that names the header
      expect(caText).toMatch(new RegExp(PEM_KEY_LINE, "m"));
      const caKey =
        caText
          .split("\n")
          .find((line) => line.length > 40 && !line.startsWith("-----"))
          ?.slice(0, 40) ?? "";
      expect(caKey).not.toBe("");
      const secrets: Array<[string, string]> = [
        ["a vault credential's value", VAULT_VALUE],
        ["the gateway CA's private key", caKey],
        ["the model's key", agentCase.key],
      ];
      const sweep = `/tmp/.sweep-${MARK}`;
      const stolen = await mintToken(paths.identity, { subject: "org/bob", runId: "bob-finished" });
      await revokeToken(paths.identity, stolen);
      const live = await mintToken(paths.identity, { subject: "org/bob", runId: "bob-live" });
      const port = listeningPort(allowed);
      const attempts: Attempt[] = [
        ...networkAttempts({
          hostAddress: hostBridgeAddress(),
          bystanderPort: listeningPort(bystander),
          gatewayPort: deployment.gatewayPort,
          neighbourIp,
        }),
        ...secretAttempts({
          sweep,
          secrets,
          inEnv: [
            ["a vault value", VAULT_VALUE],
            ["the model's key", agentCase.key],
          ],
        }),
        inAnyProcess("a vault value", VAULT_VALUE),
        inAnyProcess("the model's key", agentCase.key),
        ...identityAttempts({ stolen, live, allowedPort: port, vaultValue: VAULT_VALUE }),
      ];
      const controls: Attempt[] = [
        ...networkControls({ port, vaultValue: VAULT_VALUE }),
        sweepFindsOwn(sweep, ELF_STORE),
        {
          name: "the model key's variable holds roster's sentinel, read from every process",
          group: "control",
          run: `cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -qxF -- '${agentCase.keyEnv}=${SENTINEL}'`,
        },
      ];
      standIn.probe(
        probeScript(
          attempts,
          controls,
          sweepScript(sweep, [...secrets.map(([, value]) => value), ELF_STORE]),
        ),
      );
      try {
        const run = await deployment.roster(["run", "elf", "look around"], { timeoutMs: 600_000 });
        expect(run.code, run.stderr).toBe(0);
        expect(run.stdout, run.stderr).toContain("probed");
      } finally {
        await revokeToken(paths.identity, live);
      }
      const found = readOutcomes(standIn.result(), attempts, controls);
      console.log(`agent: ${agentCase.title}\n${formatOutcomes(found)}`);
      expect(
        found.filter((outcome) => outcome.result !== "held"),
        standIn.result(),
      ).toEqual([]);

      // the run was the agent's, and the door wrote down what it refused
      const record = latestRecord(paths, "elf");
      expect(record).toMatchObject({ agent: agentCase.agent, ended_by: "exit" });
      const lines = readDecisions(paths.audit);
      expect(lines.some((line) => line.request.path === "/healthz" && line.rule === "closed")).toBe(
        true,
      );
      expect(lines.some((line) => line.request.host === "169.254.169.254")).toBe(true);
      // the three tokens not this run's refused as the box's own run, never as bob's
      const wrong = lines.filter((line) => line.rule === "wrong-run");
      expect(wrong.map((line) => [line.status, line.subject])).toEqual(
        Array(3).fill([403, "org/elf"]),
      );
      // the neighbour was listening on its address all along
      neighbourAnswers(neighbour, neighbourIp);
    }, 600_000);
  });
});
