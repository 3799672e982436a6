// A real OAuth 2.1 authorization server for the resource-server tests: oidc-provider on loopback with its
// development login and consent pages, dynamic client registration, and JWT access tokens for one resource.
// Usage: node oauth_issuer.mjs PORT RESOURCE SCOPE ACCESS_TOKEN_SECONDS (OIDC_PROVIDER = the package's index.js).
import { pathToFileURL } from 'node:url';

const [port, resource, scope, ttl] = process.argv.slice(2);
const { default: Provider, errors } = await import(pathToFileURL(process.env.OIDC_PROVIDER).href);

const provider = new Provider(`http://127.0.0.1:${port}`, {
  scopes: ['openid', 'offline_access', scope],
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return { scope, audience: resource, accessTokenTTL: Number(ttl), accessTokenFormat: 'jwt',
                 jwt: { sign: { alg: 'RS256' } } };
      },
    },
  },
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
});
provider.listen(Number(port), '127.0.0.1', () => console.log('ready'));
