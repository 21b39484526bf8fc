import * as ort from 'onnxruntime-node';
const orig = ort.InferenceSession.create;
(ort.InferenceSession as any).create = async (...a: any[]) => { const t = performance.now(); const s = await (orig as any).apply(ort.InferenceSession, a); console.log('create', (performance.now() - t).toFixed(0), 'ms', a[0]?.length); return s; };
await import('./_create.mts');
