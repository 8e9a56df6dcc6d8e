import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { workerView } from "../../runner/ground/config/worker-view.ts";
import { runRoster } from "../support/cli.ts";
import { type PublicDeployment, publicDeployment } from "../support/public-deployment.ts";

/**
 * The deployment in test/fixtures/public-roster, written only in the public
 * roster's documented spellings, validates here with no error, and `roster
 * validate` names each place ours means or spells it otherwise in one notice
 * — exactly these, so a new difference can't slip in unsaid. Its model comes
 * from its model connection, as the public roster's does.
 */
let deployment: PublicDeployment;
beforeAll(async () => {
  deployment = await publicDeployment();
});
afterAll(async () => {
  await rm(deployment.root, { recursive: true, force: true });
});

interface Said {
  file: string;
  line: number;
  field: string;
  message: string;
}

const where = (said: Said) =>
  `${said.file.slice(said.file.indexOf("config/") + "config/".length)} ${said.field}`;

describe("a deployment written for the public roster", () => {
  it("validates with no error and one notice per deliberate difference", async () => {
    const result = await runRoster(["validate", "--json"], deployment.env);
    expect(result.code, result.stderr).toBe(0);
    const body = JSON.parse(result.stdout) as { ok: boolean; errors: Said[]; notices: Said[] };
    expect(body.errors).toEqual([]);
    expect(body.ok).toBe(true);
    expect(body.notices.map(where).sort()).toEqual(
      [
        "connections/anthropic.toml provider",
        "connections/anthropic.toml provider",
        "connections/discord.toml grant.dobby",
        "org.toml action.1.executor",
        "org.toml box.cpus",
        "org.toml box.pids_limit",
        "org.toml knowledge.max_file_chars",
        "org.toml memory.recall_char_budget",
        "org.toml memory.recall_max_notes",
        "providers.toml tracker",
        "workers/dobby/worker.toml heartbeat",
        "workers/dobby/worker.toml memory.recall_max_notes",
      ].sort(),
    );
    for (const notice of body.notices) {
      expect(notice.line).toBeGreaterThan(0);
      expect(notice.message.length).toBeGreaterThan(10);
    }
    // and the plain form: one line each on stderr, exit 0
    const plain = await runRoster(["validate"], deployment.env);
    expect(plain.code).toBe(0);
    expect(plain.stderr.match(/^notice: .+:\d+: [\w.]+: .+$/gm)).toHaveLength(body.notices.length);
  });

  it("takes its model from its model connection, reached only through that connection's edges", () => {
    const config = loadConfig(deployment.paths.config, { vaultDir: deployment.paths.vault });
    expect(config.errors).toEqual([]);
    expect(config.org.model).toEqual({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      credential: "anthropic",
    });
    expect(workerView(config, "dobby")?.model).toMatchObject({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
    });
    // no org-wide model grant: the connection's own rule lets the model host through
    expect(config.grants.map((grant) => grant.name)).not.toContain("model:anthropic");
    expect(config.grants.map((grant) => grant.name)).toContain("connection:anthropic");
  });

  it("reads the host pi's default model, and refuses two model connections it can't choose between", async () => {
    const piDir = String(deployment.env.PI_CODING_AGENT_DIR);
    await writeFile(
      join(piDir, "settings.json"),
      JSON.stringify({ defaultProvider: "anthropic", defaultModel: "claude-opus-4-1" }),
    );
    const withPi = await runRoster(["worker", "show", "dobby", "--json"], deployment.env);
    expect(withPi.code, withPi.stderr).toBe(0);
    expect(withPi.stdout).toContain("claude-opus-4-1");
    await rm(join(piDir, "settings.json"));

    const second = join(deployment.paths.config, "connections/openai.toml");
    await writeFile(second, 'provider = "openai"\n\n[grant.org]\n');
    try {
      const refused = await runRoster(["validate"], deployment.env);
      expect(refused.code).toBe(2);
      expect(refused.stdout).toMatch(
        /org\.toml:1: model: no \[model\], and the model connections .*anthropic\.toml, .*openai\.toml leave it open/,
      );
    } finally {
      await rm(second);
    }
  });
});
