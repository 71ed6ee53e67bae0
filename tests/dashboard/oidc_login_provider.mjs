// A real OpenID provider (npm `oidc-provider`) on 127.0.0.1 for the dashboard's login tests.
//
// node oidc_login_provider.mjs <node_modules> <config.json>
// config: {redirect_uri, resource, users: {<login>: {groups, email, name}}, clients: [{id, secret, groups}]}
// Prints one JSON line {"issuer"} once listening. The dashboard's client `nexus-dashboard` is a
// public client (PKCE, no secret) using the authorization code flow; the provider's own
// development login form takes any password (its login decides the account) and asks for
// consent. Its claims (sub, name, email, email_verified, groups) go into the ID token. The other
// clients get JWT access tokens for `resource` by client credentials, with their groups.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, configPath] = process.argv.slice(2);
const { default: Provider } = await import(
  pathToFileURL(join(nodeModules, "oidc-provider", "lib", "index.js")).href
);
const config = JSON.parse(readFileSync(configPath, "utf8"));
const machines = Object.fromEntries(config.clients.map((c) => [c.id, c]));

function build(issuer) {
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: "nexus-dashboard",
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code"],
        response_types: ["code"],
        redirect_uris: [config.redirect_uri],
      },
      ...config.clients.map((c) => ({
        client_id: c.id,
        client_secret: c.secret,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        scope: "mcp:tools",
      })),
    ],
    cookies: { keys: ["dashboard-test-cookie-key"] },
    scopes: ["openid", "profile", "email", "groups", "mcp:tools"],
    claims: { openid: ["sub"], profile: ["name"], email: ["email", "email_verified"], groups: ["groups"] },
    conformIdTokenClaims: false, // the scopes' claims in the ID token itself (no userinfo round trip)
    findAccount: (ctx, id) => ({
      accountId: id,
      claims: () => {
        const user = config.users[id] ?? {};
        return { sub: id, name: user.name ?? id, email: user.email, email_verified: Boolean(user.email), groups: user.groups ?? [] };
      },
    }),
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => config.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: "mcp:tools",
          audience: config.resource,
          accessTokenTTL: 600,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "RS256" } },
        }),
      },
    },
    extraTokenClaims: (ctx, token) => {
      const groups = machines[token.clientId]?.groups;
      return groups ? { groups } : undefined;
    },
  });
  provider.on("server_error", (ctx, err) => console.error("server_error", err));
  return provider;
}

import http from "node:http";
let provider;
const server = http.createServer((req, res) => provider.callback()(req, res));
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  provider = build(`http://127.0.0.1:${port}`);
  process.stdout.write(JSON.stringify({ issuer: provider.issuer }) + "\n");
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
