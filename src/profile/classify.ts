/**
 * What a kernel is: its category, a readable label, and whether it runs on Tensor Cores. An ONNX
 * Runtime kernel is named by its op type (`Conv`, `QuickGelu`, `ReorderInput`), looked up in a table;
 * a CUDA kernel name (torch traces, ORT builds with device kernel events) goes through the original's
 * ordered regex rules, so profiles from either source read the same way.
 */

export const CATEGORIES = ['gemm / conv', 'layout / copy', 'reduction / norm', 'elementwise', 'pool / resize', 'other'] as const;

const ORT_OPS: Record<string, string[]> = {
  'gemm / conv': [
    'Conv', 'FusedConv', 'NhwcFusedConv', 'ConvTranspose', 'ConvInteger', 'QLinearConv', 'NhwcConv',
    'MatMul', 'FusedMatMul', 'MatMulInteger', 'MatMulIntegerToFloat', 'QLinearMatMul', 'MatMulNBits', 'Gemm', 'FusedGemm', 'Einsum',
    // Fused attention kernels are batched matrix products (QK^T, softmax, AV) end to end.
    'Attention', 'MultiHeadAttention', 'GroupQueryAttention',
  ],
  'layout / copy': [
    'Transpose', 'Reshape', 'Concat', 'Split', 'Slice', 'Gather', 'GatherElements', 'GatherND', 'Scatter', 'ScatterND',
    'ScatterElements', 'Squeeze', 'Unsqueeze', 'Flatten', 'Expand', 'Tile', 'Pad', 'Identity', 'Cast', 'Shape', 'Size',
    'ReorderInput', 'ReorderOutput', 'DepthToSpace', 'SpaceToDepth', 'MemcpyFromHost', 'MemcpyToHost', 'ConstantOfShape',
    'QuantizeLinear', 'DequantizeLinear', 'DynamicQuantizeLinear',
  ],
  'reduction / norm': [
    'BatchNormalization', 'LayerNormalization', 'SimplifiedLayerNormalization', 'SkipLayerNormalization',
    'InstanceNormalization', 'GroupNorm', 'GroupNormalization', 'LpNormalization', 'Softmax', 'LogSoftmax',
    'ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL1', 'ReduceL2', 'ReduceLogSumExp',
    'ReduceSumSquare', 'ArgMax', 'ArgMin', 'CumSum', 'TopK',
  ],
  elementwise: [
    'Add', 'Sub', 'Mul', 'Div', 'Pow', 'Sqrt', 'Exp', 'Log', 'Neg', 'Abs', 'Reciprocal', 'Floor', 'Ceil', 'Round',
    'Sigmoid', 'HardSigmoid', 'Relu', 'LeakyRelu', 'PRelu', 'Elu', 'Selu', 'Celu', 'Gelu', 'FastGelu', 'BiasGelu',
    'QuickGelu', 'HardSwish', 'Swish', 'Mish', 'Softplus', 'Softsign', 'Tanh', 'Erf', 'Sin', 'Cos', 'Clip', 'Max',
    'Min', 'Mean', 'Sum', 'Where', 'Equal', 'Greater', 'GreaterOrEqual', 'Less', 'LessOrEqual', 'Not', 'And', 'Or',
    'Xor', 'Sign', 'IsNaN', 'IsInf', 'Mod', 'BitShift', 'Range', 'BiasAdd', 'BiasSoftmax',
  ],
  'pool / resize': [
    'MaxPool', 'AveragePool', 'GlobalAveragePool', 'GlobalMaxPool', 'LpPool', 'GlobalLpPool', 'MaxRoiPool', 'RoiAlign',
    'Upsample', 'Resize', 'GridSample',
  ],
};

const ORT_CATEGORY = new Map<string, string>(Object.entries(ORT_OPS).flatMap(([cat, ops]) => ops.map((op) => [op, cat] as const)));

/** The original's CUDA-kernel rules, in order; the first hit on the lower-cased name wins. */
const CUDA_RULES: Array<[string, RegExp]> = [
  ['reduction / norm', /bn_bw|bn_fw|batchnorm|batch_norm|layer_norm|group_norm|instance_norm|softmax|welford|\breduce|variance|rms_norm/],
  ['layout / copy', /nchwtonhwc|nhwctonchw/],
  ['gemm / conv', /gemm|conv|implicit|cutlass|cudnn|wgrad|dgrad|winograd/],
  ['layout / copy', /memcpy|memset|\bcopy|catarray|concat|contiguous|\bgather|\bscatter|\bpermute|\btranspose/],
  ['elementwise', /elementwise|vectorized|pointwise|activation|silu|relu|sigmoid|unary|binary|clamp|fill|arange/],
];

const FRIENDLY: Array<[string, string]> = [
  ['bn_bw', 'cudnn batchnorm (bwd)'], ['bn_fw', 'cudnn batchnorm (fwd)'], ['nchwtonhwc', 'layout nchw->nhwc'],
  ['nhwctonchw', 'layout nhwc->nchw'], ['implicitgemm', 'cutlass conv (implicit gemm)'], ['implicit_convolve', 'implicit conv'],
  ['wgrad', 'conv wgrad'], ['dgrad', 'conv dgrad'], ['cgemm', 'gemm'], ['sgemm', 'gemm'], ['gemm', 'gemm'],
  ['vectorized_elementwise', 'elementwise'], ['elementwise', 'elementwise'], ['softmax', 'softmax'], ['reduce', 'reduction'],
  ['cat', 'concat'],
];

const TENSOR_CORE = /h884|h1688|i16832|i8816|s16816|s1688|hmma|imma|tensorop|wmma|16816|16832|884gemm|1688gemm/;

/** An ORT kernel key is `OpType`, or `OpType [Provider]` off the CPU provider. */
const opTypeOf = (name: string): string => name.replace(/ \[[^\]]*\]$/, '');

export function kernelCategory(name: string): string {
  const ort = ORT_CATEGORY.get(opTypeOf(name));
  if (ort) return ort;
  const low = name.toLowerCase();
  for (const [cat, re] of CUDA_RULES) if (re.test(low)) return cat;
  return 'other';
}

export function friendlyKernel(name: string): string {
  if (ORT_CATEGORY.has(opTypeOf(name))) return name;
  const low = name.toLowerCase();
  for (const [needle, label] of FRIENDLY) if (low.includes(needle)) return label;
  return name.slice(0, 40);
}

export function isTensorCore(name: string): boolean {
  return !ORT_CATEGORY.has(opTypeOf(name)) && TENSOR_CORE.test(name.toLowerCase());
}
