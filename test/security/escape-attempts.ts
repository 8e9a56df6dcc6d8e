import { execFileSync } from "node:child_process";
import { BOX_IMAGE, DOOR_PORT } from "../../runner/boundary/box/layout.ts";
import { aimAt, RUN_LIMITS } from "../support/docker.ts";
import type { Attempt } from "./attempts.ts";

/**
 * The escape suite's attempts that more than one suite runs: the way out by
 * the network, the reads of a secret, the uses of another run's token. The
 * escape suite runs them through `roster box exec`, the agent escape suite
 * through Claude Code's and Codex's own shell tools; each suite sets up what
 * they aim at and passes it in, so both try the very same commands.
 */

/** An unprivileged ICMP echo (a datagram socket, as ping uses); exit 0 only on a reply. */
export const icmpEcho = (host: string) => {
  aimAt("ICMP echo", host);
  return `timeout 6 python3 -c "
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP); s.settimeout(4)
s.sendto(struct.pack('!BBHHH', 8, 0, 0, 0, 1) + b'roster', ('${host}', 0)); s.recv(64)"`;
};

/**
 * At the outside host (support/outside-host.ts), which listens on fixed
 * addresses: only a suite that owns them (solo in scripts/engine-suites.mjs)
 * may aim there, and it checks the host heard nothing.
 */
export function outsideAttempts(outside: {
  address: string;
  tcpPort: number;
  udpPort: number;
  /** Sent in the UDP datagrams, for the outside host's log. */
  mark: string;
}): Attempt[] {
  const { address, tcpPort, udpPort, mark } = outside;
  return [
    {
      name: "TCP to an outside host",
      group: "network",
      run: `timeout 5 bash -c 'exec 3<>/dev/tcp/${address}/${tcpPort}'`,
    },
    {
      name: "HTTP to an outside host, around the proxy",
      group: "network",
      run: `curl -s --noproxy '*' --max-time 5 http://${address}:${tcpPort}/ | grep -q outside`,
    },
    {
      name: "UDP to an outside host (checked there)",
      group: "network",
      run: `for i in 1 2 3; do echo udp-${mark} > /dev/udp/${address}/${udpPort}; done; false`,
    },
    {
      name: "ICMP echo to an outside host",
      group: "network",
      run: icmpEcho(address),
    },
  ];
}

/**
 * Everything else a box might reach past its door: the host (its address on
 * Docker's bridge, a port listening there, the gateway's own port), names,
 * a public resolver, the door's health check, another interface, cloud
 * metadata, the Docker socket, a container on the default bridge.
 */
export function networkAttempts(to: {
  /** The host's address on Docker's default bridge. */
  hostAddress: string;
  /** A port listening on every host address. */
  bystanderPort: number;
  gatewayPort: number;
  /** A container on the default bridge, listening on 9000 (startNeighbour). */
  neighbourIp: string;
}): Attempt[] {
  const { hostAddress, bystanderPort, gatewayPort, neighbourIp } = to;
  return [
    {
      name: "ICMP echo to the host",
      group: "network",
      run: icmpEcho(hostAddress),
    },
    {
      name: "DNS lookup of a name",
      group: "network",
      run: "timeout 5 getent hosts example.com",
    },
    {
      name: "DNS query straight to a public resolver",
      group: "network",
      run: `timeout 6 python3 -c "
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(4)
s.sendto(bytes.fromhex('123401000001000000000000076578616d706c6503636f6d0000010001'), ('8.8.8.8', 53)); s.recv(512)"`,
    },
    {
      name: "a host port other than the gateway's",
      group: "network",
      run: `timeout 5 bash -c 'exec 3<>/dev/tcp/${hostAddress}/${bystanderPort}'`,
    },
    {
      name: "the gateway's port on the host",
      group: "network",
      run: `timeout 5 bash -c 'exec 3<>/dev/tcp/${hostAddress}/${gatewayPort}'`,
    },
    {
      name: "the gateway's health check through the door (names a host path)",
      group: "network",
      run: `curl -s --noproxy '*' --max-time 5 http://127.0.0.1:${DOOR_PORT}/healthz | grep -q config_root`,
    },
    {
      name: "a network interface besides loopback",
      group: "network",
      run: "grep -v -e '^ *lo:' -e '|' /proc/net/dev | grep -q .",
    },
    {
      name: "a host port through the proxy",
      group: "network",
      run: `curl -s -f --max-time 5 http://host.docker.internal:${bystanderPort}/ | grep -q bystander`,
    },
    {
      name: "cloud metadata through the proxy",
      group: "network",
      run: "curl -s -f --max-time 5 http://169.254.169.254/latest/meta-data/",
    },
    {
      name: "the Docker socket",
      group: "network",
      run: "test -S /var/run/docker.sock || test -S /run/docker.sock",
    },
    {
      name: "a container on Docker's default bridge",
      group: "network",
      run: `timeout 5 bash -c 'exec 3<>/dev/tcp/${neighbourIp}/9000'`,
    },
  ];
}

/**
 * What the box may do on the network, so the attempts' tools are shown to
 * work: reach a granted host (`allowed.test`, resolved to the host's
 * loopback, echoing its x-api-key) with the vault's value injected at the
 * door, through its proxy, and get the door's legible 403 for any other host.
 */
export function networkControls(allowed: { port: number; vaultValue: string }): Attempt[] {
  return [
    {
      name: "an allowed host through the gateway, with the credential injected there",
      group: "control",
      run: `curl -s -f --max-time 10 http://allowed.test:${allowed.port}/ | grep -q "allowed saw ${allowed.vaultValue}"`,
    },
    {
      name: "the box's proxy is its door on loopback, with its run's token",
      group: "control",
      run: `[[ "$HTTPS_PROXY" =~ ^http://[^@/]+@127\\.0\\.0\\.1:${DOOR_PORT}$ ]]`,
    },
    {
      name: "an ungranted host through the proxy gets the gateway's legible 403",
      group: "control",
      run: `test "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://example.test/)" = 403`,
    },
  ];
}

/** A container on Docker's default bridge listening on 9000, as another worker's tool might: its id. */
export function startNeighbour(): string {
  return execFileSync(
    "docker",
    [
      "run",
      ...RUN_LIMITS,
      "-d",
      "--rm",
      "--label",
      "roster.test=escape-neighbour",
      BOX_IMAGE,
      // a run killed before its finally leaves no neighbour behind for good: --rm takes it at 10 min
      "timeout",
      "600",
      "python3",
      "-c",
      "import socket\ns = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', 9000)); s.listen()\nwhile True: s.accept()[0].close()",
    ],
    { encoding: "utf8" },
  ).trim();
}

/** Throws unless the neighbour answers on its address: a box that could not reach it was stopped. */
export function neighbourAnswers(neighbour: string, neighbourIp: string): void {
  execFileSync("docker", [
    "exec",
    neighbour,
    "bash",
    "-c",
    `timeout 5 bash -c 'exec 3<>/dev/tcp/${neighbourIp}/9000'`,
  ]);
}

/**
 * A PEM private key's first line, alone on its line: a key file, not code or
 * docs that name the header (the engine's and npm's do).
 */
export const PEM_KEY_LINE = "^-----BEGIN (EC |RSA |ENCRYPTED )?PRIVATE KEY-----$";

/** Where a leaked secret would be found; /proc, /sys and /dev are not files. */
export const SEARCH = "/home /tmp /opt /etc /run /var /usr/local /srv /root /mnt /media";

/**
 * One read of the whole box for every value at once (each whole-box read
 * takes a minute under gVisor, whose file proxy serves every read), writing
 * what it found to `sweep`: the prelude of secretAttempts, which then ask the
 * sweep's findings. `values` holds the secrets and the box's own value that
 * sweepFindsOwn looks for.
 */
export function sweepScript(sweep: string, values: string[]): string {
  const patterns = values
    .map((value) => `-e '${value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}'`)
    .join(" ");
  return `grep -rhosE ${patterns} -e '${PEM_KEY_LINE}' ${SEARCH} > ${sweep}`;
}

/**
 * Each secret anywhere in the box (as the sweep found), each of `inEnv` in
 * the environment its commands get, and a private key file anywhere.
 */
export function secretAttempts(read: {
  sweep: string;
  /** What each is, and its value. */
  secrets: Array<[string, string]>;
  inEnv: Array<[string, string]>;
}): Attempt[] {
  return [
    ...read.secrets.map(([what, value]) => ({
      name: `read ${what} anywhere in the box`,
      group: "read",
      run: `grep -qF -- '${value}' ${read.sweep}`,
    })),
    ...read.inEnv.map(([what, value]) => ({
      name: `${what} in the box's environment`,
      group: "read",
      run: `env | grep -qF -- '${value}'`,
    })),
    {
      name: "a private key file anywhere",
      group: "read",
      run: `grep -qE -- '${PEM_KEY_LINE}' ${read.sweep}`,
    },
  ];
}

/** The control of secretAttempts: the sweep read what the box may read (a value put there for it). */
export function sweepFindsOwn(sweep: string, own: string): Attempt {
  return {
    name: "the sweep finds the box's own store",
    group: "read",
    run: `grep -qF -- '${own}' ${sweep}`,
  };
}

/**
 * Getting the door to add the vault's value for a request that is not this
 * run's: with a finished run's (revoked) token, another worker's live run's,
 * a made-up one, or none; and proposing an action with no token, or in
 * another worker's name. `allowed.test` is as networkControls has it.
 */
export function identityAttempts(use: {
  /** A revoked run token. */
  stolen: string;
  /** Another worker's live run's token. */
  live: string;
  allowedPort: number;
  vaultValue: string;
}): Attempt[] {
  const via = (token: string) =>
    `curl -s -f --max-time 10 -x http://${token}:x@127.0.0.1:${DOOR_PORT} http://allowed.test:${use.allowedPort}/ | grep -q 'allowed saw'`;
  return [
    { name: "a finished run's (revoked) token", group: "identity", run: via(use.stolen) },
    { name: "another worker's live run's token", group: "identity", run: via(use.live) },
    {
      name: "a made-up token",
      group: "identity",
      run: via("11111111-2222-3333-4444-555555555555"),
    },
    {
      // with no token the request is still this run's, as a page the renderer loads is: read, never credentialed
      name: "no token at all, for the credential",
      group: "identity",
      run: `curl -s -f --max-time 10 -x http://127.0.0.1:${DOOR_PORT} http://allowed.test:${use.allowedPort}/ | grep -q 'allowed saw ${use.vaultValue}'`,
    },
    {
      name: "no token at all, to propose",
      group: "identity",
      run: `curl -s --max-time 10 -x http://127.0.0.1:${DOOR_PORT} -X POST -H 'content-type: application/json' https://actions.roster.internal/submit -d '{"intent":"send_email","payload":{"to":["x@example.test"],"subject":"s","body":"b"}}' | grep -q '"status":"\\(done\\|pending\\|error\\)"'`,
    },
    {
      name: "an envelope that names another worker and run",
      group: "identity",
      run: `curl -s --max-time 10 -X POST -H 'content-type: application/json' https://actions.roster.internal/submit -d '{"intent":"send_email","worker":"bob","subject":"org/bob","run_id":"bob-live","payload":{"to":["x@example.test"],"subject":"s","body":"b"}}' | grep -q '"worker":"bob"'`,
    },
  ];
}
