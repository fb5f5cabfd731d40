// Authorization server metadata (RFC 8414): what a standard OAuth client library reads to find
// the gateway's endpoints and learn what they take, instead of being configured by hand. The
// endpoints' URLs are the issuer's origin with their declared paths (decision 343).
import { z } from 'zod';
import { CLIENT_AUTH_METHODS } from './client-auth.js';
import { PKCE_METHOD } from './pkce.js';

/** Where the metadata is served (RFC 8414 section 3, for an issuer without a path). */
export const METADATA_PATH = '/.well-known/oauth-authorization-server';

export const serverMetadataSchema = z.object({
  issuer: z.string().describe('PUBLIC_ORIGIN, else the origin this request was sent to'),
  authorization_endpoint: z.string(),
  token_endpoint: z.string(),
  revocation_endpoint: z.string(),
  response_types_supported: z.array(z.literal('code')),
  response_modes_supported: z.array(z.literal('query')),
  grant_types_supported: z.array(z.literal('authorization_code')),
  code_challenge_methods_supported: z.array(z.literal(PKCE_METHOD)),
  token_endpoint_auth_methods_supported: z.array(z.enum(CLIENT_AUTH_METHODS)),
  revocation_endpoint_auth_methods_supported: z.array(z.enum(CLIENT_AUTH_METHODS)),
  authorization_response_iss_parameter_supported: z
    .literal(true)
    .describe('every authorization response carries iss (RFC 9207)'),
});

export type ServerMetadata = z.infer<typeof serverMetadataSchema>;

/** The paths of the endpoints the metadata names (from their route declarations). */
export interface OAuthEndpointPaths {
  readonly authorization: string;
  readonly token: string;
  readonly revocation: string;
}

/**
 * The metadata for `issuer`. No `scopes_supported`: tokens have no scopes (decision 140), and
 * no refresh tokens, so the one grant is the authorization code.
 */
export function serverMetadata(issuer: string, paths: OAuthEndpointPaths): ServerMetadata {
  return {
    issuer,
    authorization_endpoint: `${issuer}${paths.authorization}`,
    token_endpoint: `${issuer}${paths.token}`,
    revocation_endpoint: `${issuer}${paths.revocation}`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code'],
    code_challenge_methods_supported: [PKCE_METHOD],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    authorization_response_iss_parameter_supported: true,
  };
}
