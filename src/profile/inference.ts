/**
 * `profileInference` in Node: the inference profile loop (inference-loop.ts) with ORT's profile
 * files (recorder.ts), the process's resident set, and profile.json, profile_summary.json and
 * timeline.html written to `saveDir` (write.ts).
 */
import { runInferenceProfile, type InferenceProfileOptions, type InferenceTarget, type ProfilePlatform } from './inference-loop.ts';
import { ProfileRecorder } from './recorder.ts';
import type { ProfileAnalysis } from './schema.ts';
import { finalizeProfile } from './write.ts';

export { TRACE_STEPS, untracedProfile, type InferenceProfileOptions, type InferenceTarget } from './inference-loop.ts';

const NODE: ProfilePlatform<ProfileRecorder> = {
  startTrace: (engines) => ProfileRecorder.start(engines),
  rssBytes: () => process.memoryUsage.rss(),
  finalize: ({ trace, ...o }) => finalizeProfile({ ...o, writeTrace: trace ? (path) => trace.finish(path) : null }),
};

export function profileInference(model: InferenceTarget, images: readonly string[], opts: InferenceProfileOptions): Promise<ProfileAnalysis> {
  return runInferenceProfile(NODE, model, images, opts);
}
