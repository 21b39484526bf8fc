/**
 * ONNX (de)serialisation of the IR through @bufbuild/protobuf with the onnx-buf schema (ONNX 1.20).
 * Writing is the export/session path; reading gives back metadata and graph IO for loading
 * `.onnx` files exported by this package (or recognisable ones exported elsewhere).
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  AttributeProto_AttributeType as AttrType,
  ModelProtoSchema,
  type AttributeProto,
  type ModelProto,
  type TensorProto,
  type ValueInfoProto,
} from 'onnx-buf';
import { Graph, type Attr, type Dim, type ValueInfo } from './ir.ts';
import { fromBytes, toBytes, type DType, type HostTensor } from './tensor.ts';

const ONNX_DTYPE: Record<DType, number> = {
  float32: 1, uint8: 2, int8: 3, int16: 5, int32: 6, int64: 7, bool: 9, float16: 10, float64: 11, bfloat16: 16,
};
const DTYPE_FROM_ONNX = new Map<number, DType>(Object.entries(ONNX_DTYPE).map(([k, v]) => [v, k as DType]));

export const DEFAULT_OPSET = 17;

function tensorProto(name: string, t: HostTensor) {
  return {
    name,
    dims: t.dims.map((d) => BigInt(d)),
    dataType: ONNX_DTYPE[t.dtype],
    rawData: toBytes(t) as Uint8Array<ArrayBuffer>,
  };
}

function attributeProto(name: string, a: Attr) {
  if ('i' in a) return { name, type: AttrType.INT, i: BigInt(a.i) };
  if ('f' in a) return { name, type: AttrType.FLOAT, f: a.f };
  if ('s' in a) return { name, type: AttrType.STRING, s: new TextEncoder().encode(a.s) };
  if ('ints' in a) return { name, type: AttrType.INTS, ints: a.ints.map((v) => BigInt(v)) };
  if ('floats' in a) return { name, type: AttrType.FLOATS, floats: a.floats };
  return { name, type: AttrType.TENSOR, t: tensorProto('', a.t) };
}

function valueInfoProto(v: ValueInfo) {
  return {
    name: v.name,
    type: {
      value: {
        case: 'tensorType' as const,
        value: {
          elemType: ONNX_DTYPE[v.dtype],
          shape: v.unshaped ? undefined : {
            dim: v.shape.map((d) =>
              typeof d === 'number'
                ? { value: { case: 'dimValue' as const, value: BigInt(d) } }
                : { value: { case: 'dimParam' as const, value: d } },
            ),
          },
        },
      },
    },
  };
}

export interface SerializeOptions {
  opset?: number;
  producerVersion?: string;
  /** Extra graph outputs without declared types (ORT infers them): used to probe shapes. */
  untypedOutputs?: string[];
}

/** ONNX Runtime's contrib ops (`com.microsoft`, version 1) and any other non-default domain the nodes use. */
function extraDomains(graph: Graph): Array<{ domain: string; version: bigint }> {
  const domains = new Set<string>();
  for (const n of graph.nodes) if (n.domain && n.domain !== 'ai.onnx') domains.add(n.domain);
  return [...domains].map((domain) => ({ domain, version: 1n }));
}

/** Serialises a graph to ONNX bytes (opset 17 by default; every node keeps its readable name). */
export function serializeModel(graph: Graph, options: SerializeOptions = {}): Uint8Array {
  const model = create(ModelProtoSchema, {
    irVersion: 8n,
    producerName: 'libreyolo',
    producerVersion: options.producerVersion ?? '',
    opsetImport: [{ domain: '', version: BigInt(options.opset ?? DEFAULT_OPSET) }, ...extraDomains(graph)],
    metadataProps: [...graph.metadata].map(([key, value]) => ({ key, value })),
    graph: {
      name: graph.name,
      node: graph.nodes.map((n) => ({
        name: n.name,
        opType: n.op,
        domain: n.domain ?? '',
        input: n.inputs,
        output: n.outputs,
        attribute: Object.entries(n.attrs).map(([k, a]) => attributeProto(k, a)),
      })),
      initializer: [...graph.initializers].map(([name, t]) => tensorProto(name, t)),
      input: graph.inputs.map(valueInfoProto),
      output: [...graph.outputs.map(valueInfoProto), ...(options.untypedOutputs ?? []).map((name) => ({ name }))],
    },
  });
  return toBinary(ModelProtoSchema, model);
}

function readTensor(t: TensorProto): HostTensor {
  const dtype = DTYPE_FROM_ONNX.get(t.dataType);
  if (!dtype) throw new Error(`unsupported ONNX tensor type ${t.dataType} in ${t.name}`);
  const dims = t.dims.map(Number);
  if (t.rawData.byteLength > 0) return fromBytes(dtype, dims, t.rawData);
  // Typed fields (used by some exporters for small tensors).
  if (dtype === 'float32') return { dtype, dims, data: Float32Array.from(t.floatData) };
  if (dtype === 'float64') return { dtype, dims, data: Float64Array.from(t.doubleData) };
  if (dtype === 'int64') return { dtype, dims, data: BigInt64Array.from(t.int64Data) };
  if (dtype === 'int32') return { dtype, dims, data: Int32Array.from(t.int32Data) };
  if (dtype === 'float16' || dtype === 'bfloat16') return { dtype, dims, data: Uint16Array.from(t.int32Data) };
  return { dtype, dims, data: Uint8Array.from(t.int32Data) };
}

function readAttr(a: AttributeProto): Attr {
  switch (a.type) {
    case AttrType.INT: return { i: Number(a.i) };
    case AttrType.FLOAT: return { f: a.f };
    case AttrType.STRING: return { s: new TextDecoder().decode(a.s) };
    case AttrType.INTS: return { ints: a.ints.map(Number) };
    case AttrType.FLOATS: return { floats: [...a.floats] };
    case AttrType.TENSOR: if (a.t) return { t: readTensor(a.t) };
  }
  throw new Error(`unsupported ONNX attribute ${a.name} (type ${a.type})`);
}

function readValueInfo(v: ValueInfoProto): ValueInfo {
  const tt = v.type?.value.case === 'tensorType' ? v.type.value.value : undefined;
  const dtype = DTYPE_FROM_ONNX.get(tt?.elemType ?? 1) ?? 'float32';
  const shape: Dim[] = (tt?.shape?.dim ?? []).map((d) =>
    d.value.case === 'dimValue' ? Number(d.value.value) : d.value.case === 'dimParam' ? d.value.value : '?',
  );
  return { name: v.name, dtype, shape };
}

export interface OnnxSummary {
  metadata: Map<string, string>;
  inputs: ValueInfo[];
  outputs: ValueInfo[];
  opset: number;
}

export function parseModel(bytes: Uint8Array): ModelProto {
  return fromBinary(ModelProtoSchema, bytes);
}

/** Reads metadata and graph IO without materialising the weights as IR tensors. */
export function summarizeModel(bytes: Uint8Array): OnnxSummary {
  const m = parseModel(bytes);
  return {
    metadata: new Map(m.metadataProps.map((p) => [p.key, p.value])),
    inputs: (m.graph?.input ?? []).filter((v) => !(m.graph?.initializer ?? []).some((t) => t.name === v.name)).map(readValueInfo),
    outputs: (m.graph?.output ?? []).map(readValueInfo),
    opset: Number(m.opsetImport.find((o) => o.domain === '' || o.domain === 'ai.onnx')?.version ?? 0n),
  };
}

/** Full IR from ONNX bytes (used by passes that rewrite exported files, e.g. fp16 conversion). */
export function deserializeModel(bytes: Uint8Array): Graph {
  const m = parseModel(bytes);
  const g = new Graph(m.graph?.name || 'model');
  for (const p of m.metadataProps) g.metadata.set(p.key, p.value);
  for (const t of m.graph?.initializer ?? []) g.initializers.set(t.name, readTensor(t));
  g.inputs = (m.graph?.input ?? []).filter((v) => !g.initializers.has(v.name)).map(readValueInfo);
  g.outputs = (m.graph?.output ?? []).map(readValueInfo);
  g.nodes = (m.graph?.node ?? []).map((n) => ({
    op: n.opType,
    name: n.name,
    inputs: [...n.input],
    outputs: [...n.output],
    attrs: Object.fromEntries(n.attribute.map((a) => [a.name, readAttr(a)])),
    ...(n.domain ? { domain: n.domain } : {}),
  }));
  return g;
}
