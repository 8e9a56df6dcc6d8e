/** The gateway's well-known port: boxes reach it at host.docker.internal:7300 unless [gateway] port says otherwise. */
export const DEFAULT_GATEWAY_PORT = 7300;
