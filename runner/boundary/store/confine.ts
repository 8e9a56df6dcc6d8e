import { spawn } from "node:child_process";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RosterError } from "../../ground/errors.ts";

/**
 * Keeps the store's end of an rsync pass inside the store, whatever a live
 * box does to it meanwhile. Opening each path without following a link is
 * not enough on every rsync (older ones resolve a folder by its path between
 * listing and opening, so a folder swapped for a symlink mid-pass leads them
 * to a host file, or lets them write outside); a chroot is, on every version:
 * the kernel resolves every path the store's end opens, symlinks and `..`
 * included, inside the store.
 *
 * rsync does that itself as a daemon (`use chroot`), and a daemon can be run
 * for one connection over a "remote shell" that is a local script. So the
 * store's end is `rsync --server --daemon` with a one-module config whose path
 * is the store, read-only for a snapshot and writable only for a restore; the
 * host's end (the snapshots) stays a plain rsync. A chroot needs root, or,
 * for a runner that is not root, a user namespace of its own (`unshare`,
 * keeping our uid); with neither, the pass is refused rather than taken
 * unconfined.
 */
export interface Confined {
  /** The rsync address of the store: `localhost::store/`. */
  address: string;
  /** Options that make rsync reach it (the remote shell). */
  args: string[];
  dispose(): Promise<void>;
}

type Mode = "root" | "namespace";

/**
 * A user namespace where we keep our own uid (so rsync's daemon does not take
 * itself for root and change groups, which a namespace refuses) and the
 * capabilities the namespace gives (so its chroot works).
 */
const NAMESPACE = ["--user", "--map-current-user", "--keep-caps"];

let probed: Promise<Mode | undefined> | undefined;

/** How this process can chroot: as root, or in a user namespace of its own (probed once). */
function chrootMode(): Promise<Mode | undefined> {
  if (process.getuid?.() === 0) return Promise.resolve("root");
  probed ??= new Promise((resolve) => {
    const child = spawn("unshare", [...NAMESPACE, "--root=/", "true"], {
      stdio: "ignore",
    });
    child.on("error", () => resolve(undefined));
    child.on("close", (code) => resolve(code === 0 ? "namespace" : undefined));
  });
  return probed;
}

/** A value for the shell script, single-quoted. */
const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

export async function confineToStore(store: string, access: "read" | "write"): Promise<Confined> {
  // rsyncd.conf reads a value to the end of its line and expands %VAR%
  if (/[\n\r%]/.test(store) || store !== store.trim())
    throw new RosterError(
      `the store path ${JSON.stringify(store)} can't be confined: it has a line break, a % or spaces at an end`,
    );
  const mode = await chrootMode();
  if (!mode)
    throw new RosterError(
      "the store can't be copied safely: rsync must run chrooted into it, which needs roster to run as root or unprivileged user namespaces to be allowed (unshare --user --map-current-user --keep-caps, util-linux 2.38 or later)",
    );
  const dir = await mkdtemp(join(tmpdir(), "roster-rsync-"));
  try {
    const config = join(dir, "rsyncd.conf");
    const shell = join(dir, "rsh");
    // rsync splits --rsh on spaces, honouring quotes: the script's path is single-quoted
    if (shell.includes("'"))
      throw new RosterError(`the temporary folder ${dir} has a quote in its name`);
    await writeFile(
      config,
      [
        "use chroot = yes",
        "numeric ids = yes",
        "munge symlinks = no",
        // stay who we are (root keeps the owners a box gave its files)
        ...(mode === "root" ? ["uid = 0", "gid = 0"] : []),
        "reverse lookup = no",
        "[store]",
        `path = ${store}`,
        `read only = ${access === "read" ? "yes" : "no"}`,
        "list = no",
        // where boxes take their locks: never copied, never deleted
        "exclude = /.locks",
        "",
      ].join("\n"),
      { mode: 0o600 },
    );
    // rsync calls it as `<shell> <host> rsync --server --daemon .`: the host is ignored
    const unshare = mode === "namespace" ? `unshare ${NAMESPACE.join(" ")} ` : "";
    await writeFile(
      shell,
      `#!/bin/sh\nwhile [ "$#" -gt 0 ] && [ "$1" != --server ]; do shift; done\nexec ${unshare}rsync --config=${quote(config)} "$@"\n`,
      { mode: 0o700 },
    );
    // the mode given to writeFile is narrowed by the umask: it must be runnable
    await chmod(shell, 0o700);
    return {
      address: "localhost::store/",
      args: ["--rsh", `'${shell}'`],
      dispose: () => rm(dir, { recursive: true, force: true }),
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
