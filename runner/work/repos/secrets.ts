import { extname } from "node:path";
import { lintSource } from "@secretlint/core";
import { creator as recommended } from "@secretlint/secretlint-rule-preset-recommend";
import { gitBytes } from "../../ground/git/git.ts";

/**
 * Secret-looking content in a push, found with secretlint's recommended rule
 * set (a maintained scanner: cloud keys, private keys, chat and registry
 * tokens, basic-auth URLs, …) rather than a list of our own. A finding names
 * the file, the line and the rule — never the value, which would otherwise be
 * copied into the journal and the model's context.
 */
const RULES = [{ id: "@secretlint/secretlint-rule-preset-recommend", rule: recommended }];

/** Reads blobs by id in one `cat-file --batch`; binary blobs (a NUL early on) come back undefined. */
export async function readBlobs(
  dir: string,
  shas: string[],
  maxBytes: number,
): Promise<Map<string, string | undefined>> {
  const blobs = new Map<string, string | undefined>();
  if (!shas.length) return blobs;
  const out = await gitBytes(dir, ["cat-file", "--batch"], {
    input: `${shas.join("\n")}\n`,
    maxBytes: maxBytes + shas.length * 128,
  });
  let at = 0;
  while (at < out.length) {
    const newline = out.indexOf(10, at);
    if (newline < 0) break;
    const [sha, type, size] = out.subarray(at, newline).toString("utf8").split(" ");
    const length = Number(size);
    if (!sha || type === "missing" || !Number.isFinite(length)) {
      at = newline + 1;
      continue;
    }
    const body = out.subarray(newline + 1, newline + 1 + length);
    at = newline + 1 + length + 1;
    const binary = body.subarray(0, 8000).includes(0);
    blobs.set(sha, binary ? undefined : body.toString("utf8"));
  }
  return blobs;
}

export async function secretFindings(
  dir: string,
  files: Array<{ path: string; sha: string }>,
  maxBytes: number,
): Promise<string[]> {
  const contents = await readBlobs(dir, [...new Set(files.map((file) => file.sha))], maxBytes);
  const findings: string[] = [];
  for (const file of files) {
    const content = contents.get(file.sha);
    if (!content) continue;
    const result = await lintSource({
      source: {
        filePath: `/${file.path}`,
        content,
        ext: extname(file.path),
        contentType: "text",
      },
      options: { config: { rules: RULES } },
    });
    for (const message of result.messages) {
      const rule = message.ruleId.replace(/^@secretlint\/secretlint-rule-/, "");
      findings.push(
        `${JSON.stringify(file.path)} line ${message.loc.start.line} looks like a secret (${rule})`,
      );
    }
  }
  return findings;
}
