// What the inference routes tell the request log about a request (ids and model only).
import type { HttpResponse } from '../http/types.js';
import type { Admission } from './admission.js';

/** The request log's model field: the client's text, bounded (it is not validated yet). */
export function modelLabel(requestedModel: string): string {
  return requestedModel.slice(0, 100);
}

/** Tells the request log who an admitted request is for. */
export function annotateAdmission(response: HttpResponse, admission: Admission): void {
  response.annotate({
    model: admission.model.id,
    orgId: admission.identity.orgId,
    ...(admission.productUser && { productUserId: admission.productUser.id }),
  });
}
