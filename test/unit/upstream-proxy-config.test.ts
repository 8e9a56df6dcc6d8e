import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { formatConfigError, loadConfig } from "../../runner/ground/config/load.ts";

/**
 * `[gateway] upstream_proxy` and its companions are checked where they are
 * written: a proxy URL with a user:pass in it (the password belongs in the
 * vault) or a path, and a no-proxy pattern grants would not take, are each a
 * line naming the file, the line and the field.
 */
const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function errorsOf(org: string): Promise<string[]> {
  const root = await mkdtemp(join(tmpdir(), "roster-upstream-proxy-"));
  roots.push(root);
  await mkdir(root, { recursive: true });
  await writeFile(join(root, "org.toml"), org);
  return loadConfig(root)
    .errors.map(formatConfigError)
    .map((line) => line.replace(`${root}/`, ""));
}

describe("[gateway] upstream_proxy", () => {
  it("takes a proxy URL, a vault name and host patterns", async () => {
    expect(
      await errorsOf(
        '[gateway]\nupstream_proxy = "https://proxy.corp:3128"\nupstream_proxy_auth = "corp-proxy"\nupstream_no_proxy = ["*.corp.example", "10.1.2.3", "git.internal"]\n',
      ),
    ).toEqual([]);
  });

  it("refuses a password in the URL, a path, a vault name with a slash, and a bad pattern, each by its line", async () => {
    const errors = await errorsOf(
      [
        "[gateway]",
        'upstream_proxy = "http://alice:s3cret@proxy.corp:3128"',
        'upstream_proxy_auth = "../corp"',
        "",
      ].join("\n"),
    );
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(
      /^org\.toml:2: gateway\.upstream_proxy: a proxy URL like "http:\/\/proxy\.corp:3128" \(scheme, host and port only; its credential goes in upstream_proxy_auth\)/,
    );
    expect(errors[1]).toMatch(
      /^org\.toml:3: gateway\.upstream_proxy_auth: a vault credential's name/,
    );
    // the patterns are checked once the section's shape is right
    expect(await errorsOf('[gateway]\nupstream_no_proxy = ["ok.example", "corp.*"]\n')).toEqual([
      'org.toml:2: gateway.upstream_no_proxy.1: "corp.*": a wildcard may only be a leading `*.` or the whole pattern `*`',
    ]);
    expect(
      await errorsOf('[gateway]\nupstream_proxy = "http://proxy.corp:3128/path"\n'),
    ).toHaveLength(1);
  });
});
