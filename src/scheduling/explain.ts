/**
 * Explanations of a scheduling run (`--explain`): what each pod tried and where it went. The scheduler reports
 * to an {@link ExplanationRecorder} it is given; {@link NoExplanations} (the default) does nothing, so a run
 * without `--explain` builds no message strings and keeps no trace.
 */
import type { Explanation } from './types.ts';

/**
 * Receives the scheduler's trace. Pods are named by `namespace/name`. `detailed` tells the scheduler's parts
 * whether to spend time on detailed failure messages (resource shortfalls, topology counts).
 */
export interface ExplanationRecorder {
  readonly detailed: boolean;
  /** One thing the pod tried, e.g. `existing node n1: not enough resources: cpu 2 > 1.5`. */
  note(pod: string, detail: string): void;
  /** The final decision for the pod (the last call wins). */
  decide(pod: string, decision: string): void;
  /** Every pod's explanation, in the order the pods were first mentioned. */
  explanations(): Explanation[];
}

/** The recorder of runs without `--explain`: records nothing. */
export const NoExplanations: ExplanationRecorder = Object.freeze({
  detailed: false,
  note: () => {},
  decide: () => {},
  explanations: () => [],
});

/** A recorder that keeps every note and decision (used for `--explain`). */
export class ExplanationTrace implements ExplanationRecorder {
  readonly detailed = true;
  private readonly byPod = new Map<string, Explanation>();

  private entry(pod: string): Explanation {
    let e = this.byPod.get(pod);
    if (!e) {
      e = { pod, decision: '', details: [] };
      this.byPod.set(pod, e);
    }
    return e;
  }

  note(pod: string, detail: string): void {
    this.entry(pod).details.push(detail);
  }

  decide(pod: string, decision: string): void {
    this.entry(pod).decision = decision;
  }

  explanations(): Explanation[] {
    return [...this.byPod.values()];
  }
}
