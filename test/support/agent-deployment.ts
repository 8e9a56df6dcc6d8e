import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "vitest";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { latestRecord, makeRosterRoot, type RosterRoot } from "./roster-root.ts";
import { Upstream } from "./upstream.ts";

/**
 * A deployment made by `roster init` whose worker elf runs another agent
 * (Claude Code, Codex) against a provider stand-in, with the provider's real
 * key in the vault, one web page the door lets it read (https://docs.test,
 * served here), and message_user held for the desk. Not a double of anything
 * of ours: the config is the example's, edited as an operator would.
 */
export const DOOR_PAGE = `<!doctype html><html><head><title>The door</title></head><body><article>
<h1>The door</h1><p>Every request a box makes is judged at the door, and the key is added there.</p>
</article></body></html>`;

export interface AgentDeployment {
  deployment: RosterRoot;
  /** The page's URL, as the box asks for it. */
  pageUrl: string;
  stop(): Promise<void>;
}

export async function agentDeployment(options: {
  agent: "claude" | "codex";
  provider: "anthropic" | "openai";
  model: string;
  baseUrl: string;
  /** The provider's real key, stored in the vault under the provider's name. */
  key: string;
  /** Appended to org.toml. */
  extraOrg?: string;
}): Promise<AgentDeployment> {
  const docs = await Upstream.start({
    tls: true,
    names: ["docs.test"],
    handler: (_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(DOOR_PAGE);
    },
  });
  const deployment = await makeRosterRoot("http://127.0.0.1:1/v1");
  const caFile = join(deployment.root, "docs-ca.pem");
  await writeFile(caFile, docs.certificate?.caPem ?? "");
  const orgFile = join(deployment.paths.config, "org.toml");
  const org = (await readFile(orgFile, "utf8"))
    .replace(
      /^\[model\][\s\S]*?\n\[engine\]/m,
      `[model]\nprovider = "${options.provider}"\nmodel = "${options.model}"\nbase_url = "${options.baseUrl}"\n\n[engine]`,
    )
    // before the example's web-read, which keeps names that resolve to loopback out
    .replace(
      '[[grant]]\nname = "web-read"',
      '[[grant]]\nname = "docs"\nverdict = "allow"\nmatch = { host = "docs.test", method = "GET" }\n\n[[grant]]\nname = "web-read"',
    )
    .replace(
      /\[gateway\]\n/,
      `[gateway]\nupstream_ca = ${JSON.stringify([caFile])}\nresolve = { "docs.test" = "127.0.0.1" }\n`,
    );
  await writeFile(
    orgFile,
    `${org}\n[[action]]\nname = "message-user"\nexecutor = "message-user"\ntrust = "gate"\n${options.extraOrg ?? ""}`,
  );
  await storeCredential(deployment.paths.vault, options.provider, { key: options.key });
  const workerFile = join(deployment.paths.config, "workers", "elf", "worker.toml");
  const worker = await readFile(workerFile, "utf8");
  await writeFile(
    workerFile,
    worker.replace(/^name = "elf"$/m, `name = "elf"\nagent = "${options.agent}"`),
  );
  return {
    deployment,
    pageUrl: `https://docs.test:${docs.port}/door`,
    stop: async () => {
      await docs.stop();
      await deployment.cleanup();
    },
  };
}

/**
 * A shell command that prints `from-shell` and the length of the key it put
 * together (a key put together wrong would search for something else and
 * find nothing: the length says it is the key), then how many of the box's
 * environment variables hold `key`, then how many files under its $HOME and
 * /tmp do: expectedKeySearch(key) in a box that never held it. The key is put
 * together in the shell, so the command itself (which an agent keeps in its
 * transcript under $HOME) does not hold it.
 */
export function keySearch(key: string): string {
  const half = Math.floor(key.length / 2);
  return `k='${key.slice(0, half)}'; k="\${k}${key.slice(half)}"; echo "from-shell \${#k}"; env | grep -c "$k"; grep -rlsF "$k" ~ /tmp 2>/dev/null | wc -l`;
}

/**
 * What a user sees after an agent's run like the tests' (a page read, a
 * message proposed): the proposal on the desk, the run's record naming the
 * agent, every model call in the door's audit under the model's rule, the page
 * read under its own, and `runs show` with the agent, the usage and spend, and
 * the conversation.
 */
export async function expectRunAfterward(
  deployment: RosterRoot,
  expected: {
    agent: "claude" | "codex";
    title: string;
    /** The model calls' path and rule at the door, and how many there were. */
    modelPath: string;
    modelRule: string;
    calls: number;
  },
): Promise<void> {
  const desk = await deployment.roster(["approvals", "ls", "--json"]);
  expect(desk.code, desk.stderr).toBe(0);
  expect(desk.stdout).toContain("The page says: true");

  const record = latestRecord(deployment.paths, "elf");
  expect(record).toMatchObject({ agent: expected.agent, ended_by: "exit", exit_code: 0 });
  const lines = readDecisions(deployment.paths.audit).filter((d) => d.run_id === record?.id);
  const modelCalls = lines.filter(
    (d) => d.request.host === "127.0.0.1" && d.request.path.endsWith(expected.modelPath),
  );
  expect(modelCalls.map((d) => [d.verdict, d.rule])).toEqual(
    Array(expected.calls).fill(["allow", expected.modelRule]),
  );
  expect(lines.some((d) => d.request.host === "docs.test" && d.rule === "docs")).toBe(true);

  const shown = await deployment.roster(["runs", "show", record?.id ?? ""]);
  expect(shown.stdout).toContain(`worker    elf (agent ${expected.title})\n`);
  expect(shown.stdout).toMatch(
    new RegExp(
      `^model {5}\\d+ tokens over ${expected.calls} model call\\(s\\).*, \\$\\d+\\.\\d{4}$`,
      "m",
    ),
  );
  expect(shown.stdout).toContain("tool fetch_pages");
  expect(shown.stdout).toContain("assistant: All done");
}

/** What keySearch prints in a box that holds the key nowhere. */
export const expectedKeySearch = (key: string): string => `from-shell ${key.length}\n0\n0`;
