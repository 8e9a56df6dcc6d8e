/**
 * Every tool the box ships runs under the guard (extensions/lib/tool-guard.ts):
 * each top-level extensions/*.ts — each one a pi extension the box loads —
 * exports what `guarded` made, so an error its tools' work raises after a call
 * returned ends that call with the error, never the run. test/box/engine.test.ts
 * shows the guard doing so in a real box; this names any extension that went
 * around it.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { guardedName } from "../../extensions/lib/tool-guard.ts";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";

const dir = join(PROJECT_ROOT, "extensions");
const extensions = readdirSync(dir).filter((name) => name.endsWith(".ts"));

describe("the box's extensions", () => {
  it("are all there to check", () => {
    expect(extensions).toEqual(
      expect.arrayContaining(["mcp.ts", "proposals.ts", "repo.ts", "web.ts"]),
    );
  });

  it.each(extensions)("%s runs its tools under the guard", async (name) => {
    const loaded = (await import(join(dir, name))) as { default?: unknown };
    expect(guardedName(loaded.default), `${name}'s default export is not guarded(...)`).toBe(
      name.replace(/\.ts$/, ""),
    );
  });
});
