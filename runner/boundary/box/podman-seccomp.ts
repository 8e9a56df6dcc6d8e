import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RosterError } from "../../ground/errors.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";

/**
 * A seccomp profile for Podman's boxes that keeps namespaces closed the way
 * Docker's default profile does. Podman's own default (containers-common's
 * seccomp.json) allows clone, clone3, unshare and mount for anyone, so that
 * containers can nest: in a box that gave `unshare -r` a root of its own, and
 * the kernel's namespace code to a worker. roster's profile is Podman's with
 * those taken out of the unconditional allow: unshare, mount, umount2,
 * pivot_root and setns are refused; clone is allowed only without namespace
 * flags; clone3 answers ENOSYS, so the C library falls back to clone.
 *
 * The profile is derived from the Podman host's own file (so the rest of its
 * rules are the ones Podman ships and tests) and written once per content to a
 * folder only this user can write. No profile found: no box (fail closed).
 */
const PODMAN_PROFILE = "/usr/share/containers/seccomp.json";
const CLOSED = new Set([
  "clone",
  "clone3",
  "unshare",
  "mount",
  "umount",
  "umount2",
  "pivot_root",
  "setns",
]);
/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET */
const NAMESPACE_FLAGS = 0x7e020000;
const ENOSYS = 38;

interface Rule {
  names: string[];
  action: string;
  args?: unknown[];
  includes?: Record<string, unknown>;
  excludes?: Record<string, unknown>;
  [key: string]: unknown;
}

/** Podman's profile with namespaces closed, as JSON text. */
export function closedNamespacesProfile(podmanProfile: string): string {
  const profile = JSON.parse(podmanProfile) as { syscalls?: Rule[] };
  const unconditional = (rule: Rule) =>
    rule.action === "SCMP_ACT_ALLOW" &&
    !rule.args?.length &&
    !Object.keys(rule.includes ?? {}).length &&
    !Object.keys(rule.excludes ?? {}).length;
  const syscalls = (profile.syscalls ?? []).map((rule) =>
    unconditional(rule) ? { ...rule, names: rule.names.filter((name) => !CLOSED.has(name)) } : rule,
  );
  syscalls.push(
    {
      names: ["clone"],
      action: "SCMP_ACT_ALLOW",
      args: [{ index: 0, value: NAMESPACE_FLAGS, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" }],
    },
    { names: ["clone3"], action: "SCMP_ACT_ERRNO", errnoRet: ENOSYS },
  );
  return `${JSON.stringify({ ...profile, syscalls })}\n`;
}

let written: string | undefined;

/** The profile's path on this host, written on first use. */
export function podmanSeccompProfile(source = PODMAN_PROFILE): string {
  if (written) return written;
  let text: string;
  try {
    text = closedNamespacesProfile(readFileSync(source, "utf8"));
  } catch (error) {
    throw new RosterError(
      `Podman's seccomp profile can't be read from ${source} (${(error as Error).message}): roster derives its boxes' profile from it, so no box was started`,
      { exitCode: 2, cause: error },
    );
  }
  const dir = join(tmpdir(), `roster-seccomp-${process.getuid?.() ?? 0}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const owner = lstatSync(dir);
  if (!owner.isDirectory() || owner.uid !== (process.getuid?.() ?? owner.uid) || owner.mode & 0o022)
    throw new RosterError(`${dir} is not a folder only this user can write: no box was started`);
  const path = join(dir, `${createHash("sha256").update(text).digest("hex").slice(0, 16)}.json`);
  replaceFileSync(path, text, { mode: 0o644 });
  written = path;
  return path;
}
