"""The Submit page's parts: the sweep form (a fragment that validates the whole sweep on every change, the way submit
will, and shows each wrong field's problem under its widget), its presets and their sizes, and the wait for a first worker."""
import streamlit as st

from dashboard.data import jobs, sweeps
from dashboard.data.model_order import label as model_label
from dashboard.data.model_order import ordered
from dashboard.data.presets import PRESETS
from dashboard.data.submission import FormValues, message, plan, slot_for, submit_all
from dashboard.markup import md
from dashboard.state import auth, quiet, resources, url_params
from dashboard.state.embedded import ENV_SWITCH, enabled
from lab import wording
from lab.axes import COMPILE_AXES
from lab.checks import SpecError
from lab.spec import ALL_LIVE, ANY_TORCH, CACHES, DEVICES, DTYPES, MAX_ITERS, MAX_TIMEOUT_S
from lab.sweep import MAX_REPEAT
from lab.team import MAX_NOTE

KEYS = {  # form field -> widget key (every widget keeps its value across pages for this session)
    "model": "f_model", "task": "f_task", "device": "f_device", "dtype": "f_dtype", "batch_sizes": "f_batch",
    **{axis.plural: f"f_{axis.plural}" for axis in COMPILE_AXES},  # the swept axes (lab.axes)
    "cache": "f_cache", "trace": "f_trace", "schedule": "f_schedule", "traffic": "f_traffic", "calls": "f_calls",
    "bucket": "f_bucket", "iters": "f_iters", "timeout_s": "f_timeout",
    "repeat": "f_repeat", "reruns": "f_reruns", "process_repeats": "f_process_repeats", "name": "f_name",
    "torch_versions": "f_torch", "tags": "f_tags", "note": "f_note"}
KEEP = ("tags", "note")  # a preset leaves these as they are
TORCH_CHOICES = {ALL_LIVE: "every version a live worker offers", ANY_TORCH: "any"}


def arg_key(model: str, name: str) -> str:
    return f"f_arg_{model}_{name}"


def _slot(slots: dict, field_name: str):
    """Where a problem shows: under its widget; a config field's under the Config fields box; else at the end."""
    here = slots.get(slot_for(field_name))
    if here is None and field_name.startswith("model_args."):
        here = slots.get("model_args.config")
    return here or st


def config_key(model: str) -> str:
    return f"f_config_{model}"


def config_fields(text: str) -> tuple[dict, str | None]:
    """The Config fields box: FIELD=VALUE lines (numbers as integers, the rest as words; lab.spec checks them)."""
    out: dict = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            return out, f"Config fields, line {n}: expected FIELD=VALUE"
        name, value = (x.strip() for x in line.split("=", 1))
        out[name] = int(value) if value.lstrip("-").isdigit() and len(value) < 19 else value
    return out, None


def init_form(catalog: dict, devices: set) -> None:
    """Fill missing widget values once from the defaults (so widgets never get a default *and* a state)."""
    first = "simplenet" if "simplenet" in catalog else sorted(catalog)[0]  # the smallest built-in model
    defaults = FormValues(model=first, device="cuda" if "cuda" in devices else "cpu").__dict__
    if KEYS["model"] not in st.session_state and st.query_params.get("model") in catalog:
        st.session_state[KEYS["model"]] = st.query_params["model"]  # a copied link's model (sweep_form writes it)
    for name, key in KEYS.items():
        st.session_state.setdefault(key, defaults[name])
    if st.session_state[KEYS["model"]] not in catalog:
        st.session_state[KEYS["model"]] = defaults["model"]


def preset_problem(key: str, catalog: dict) -> str | None:
    """Why the preset cannot fill the form (no live worker offers its model), or None."""
    model = PRESETS[key].values["model"]
    if model in catalog:
        return None
    family = model.split(":", 1)[0] if ":" in model else None
    needs = {"hf": "a worker whose Python has transformers", "timm": "a worker whose Python has timm and torchvision"}
    how = f" Start {needs[family]} (docs/operations.md), or pick" if family in needs else " Pick"
    return (f"No live worker offers {model}, which this preset needs, so the form is not shown: submitting now would "
            f"send another experiment under this preset's name.{how} another preset, or none to fill the form yourself.")


def apply_preset(key: str, catalog: dict, devices: set, gpu_sizes: bool) -> None:
    preset = PRESETS[key]
    values = preset.form_values(gpu_sizes)
    model = values["model"]
    base = FormValues(model=model, device="cuda" if "cuda" in devices else "cpu").__dict__
    for name, widget in KEYS.items():
        if name not in KEEP:  # the person's own tags and note stay
            st.session_state[widget] = values.get(name, base[name])
    info = catalog[model]
    for p in info.params:
        value = values.get("params", {}).get(p.name, p.default)
        st.session_state[arg_key(model, p.name)] = (list(value) if isinstance(value, (list, tuple)) else [value]) \
            if p.choices else value
    if info.open_args:  # a Hugging Face model's config fields (the CPU's smaller model, say)
        st.session_state[config_key(model)] = values.get("config", "")
    # what the preset filled in, to tell when the form no longer is the preset (clear_stale_preset_name)
    st.session_state["preset_values"] = {k: st.session_state[k] for k in
                                         [w for n, w in KEYS.items() if n != "name" and n not in KEEP]
                                         + [arg_key(model, p.name) for p in info.params]}
    st.session_state["preset_applied"] = key
    st.session_state["preset_sizes"] = gpu_sizes
    st.session_state.pop("preset_name_cleared", None)


def clear_stale_preset_name() -> None:
    """A sweep named after a preset must be that preset: once any field the preset filled in is changed,
    its name is cleared (before the name's widget is drawn) rather than stored on another experiment."""
    applied, filled = st.session_state.get("preset_applied"), st.session_state.get("preset_values", {})
    preset_name = PRESETS[applied].values.get("name") if applied in PRESETS else None
    if (preset_name and st.session_state.get(KEYS["name"]) == preset_name
            and any(st.session_state.get(k) != v for k, v in filled.items())):
        st.session_state[KEYS["name"]] = ""
        st.session_state["preset_name_cleared"] = True


def preset_sizes_ui(chosen: str | None, devices: set) -> bool:
    """The seed's GPU sizes where a live worker offers cuda; else the preset's CPU sizes, with a toggle back to
    the GPU's (and a note of what it scales). True: the GPU sizes."""
    if "cuda" in devices or not chosen or not PRESETS[chosen].cpu:
        return True
    gpu = st.toggle("GPU sizes", key="preset_gpu_sizes", help="The seed's sizes, for a GPU: on a CPU they take an "
                    "hour or more per job")
    changes = ", ".join(PRESETS[chosen].scaled())
    st.caption(f"The seed's GPU sizes, on a lab whose live workers offer only the CPU: a job may take an hour or more "
               f"(the CPU sizes: {changes})." if gpu else
               f"No live worker offers a GPU, so this preset is scaled to finish on a CPU in minutes: {changes}. "
               "**GPU sizes** restores the seed's.")
    return gpu


@quiet.live("2s")
def wait_for_workers() -> None:
    if resources.catalog(resources.engine()):
        st.rerun(scope="app")
    how = ("The embedded worker is starting: it imports torch to probe the device, which takes a few seconds."
           if enabled() else f"The embedded worker is off ({ENV_SWITCH}=0): start one with `python -m runner work`.")
    st.info(f"No worker is alive yet, so no models are on offer. {how} This page refreshes itself.",
            icon=":material/hourglass_top:")


@st.fragment
def sweep_form(catalog: dict, devices: set) -> None:
    slots = {}
    left, middle, right = st.columns(3, gap="large")
    with left:
        st.subheader("What to run")
        model = st.selectbox("Model", ordered(catalog), key=KEYS["model"], persist_state="session", format_func=model_label,
                             filter_mode="contains",  # matches in the list's order: the suites' models first
                             help="Type to search: the zoo's models, then Hugging Face (hf:) and timm (timm:) models "
                                  "where a worker has those packages")
        url_params.write_url_choice("model", model)  # in the link: a copied link opens the form on this model
        info = catalog[model]
        # a worker's own words (description, folder, parameter names and help, torch version): text, never markup
        st.caption(md(info.description) + ("" if info.source == "builtin" else f" · from {md(info.source)}"),
                   help="Your own model: a model file in a folder given to `make run MODELS=folder` (or a worker's "
                        "`--models-dir`). A file added or edited there is offered here within seconds, no restart "
                        "(docs/operations.md).")
        slots["model"] = st.empty()
        params = {}
        for p in info.params:
            key = arg_key(model, p.name)
            if p.choices:
                st.session_state.setdefault(key, [p.default])
                params[p.name] = st.pills(md(p.name), list(p.choices), selection_mode="multi", key=key, help=(
                    md(p.help) + " Several values: one sweep each.").strip(), persist_state="session", wrap=True,
                    format_func=md)
            else:
                st.session_state.setdefault(key, p.default)
                params[p.name] = st.number_input(md(p.name), min_value=p.minimum, max_value=p.maximum, step=1,
                                                 key=key, help=md(p.help) if p.help else None, persist_state="session")
            slots[f"model_args.{p.name}"] = st.empty()
        if info.open_args:  # a Hugging Face config's fields (runner.zoo.family_hf)
            text = st.text_area("Config fields", key=config_key(model), persist_state="session", height=90,
                                placeholder="num_hidden_layers=4\nhidden_size=1024",
                                help="FIELD=VALUE, one a line: set on the model's default config before it is built")
            fields, problem = config_fields(text or "")
            slots["model_args.config"] = st.empty()
            if problem:
                slots["model_args.config"].error(md(problem), icon=":material/error:")
            params.update(fields)
        if st.session_state[KEYS["task"]] not in info.tasks:
            st.session_state[KEYS["task"]] = info.tasks[0]
        task = st.selectbox("Task", list(info.tasks), key=KEYS["task"], persist_state="session",
                            help="inference: eval + no_grad; training: forward, backward and an optimizer step")
        slots["task"] = st.empty()
        device = st.selectbox("Device", list(DEVICES), key=KEYS["device"], persist_state="session",
                              format_func=lambda d: d if d in devices else f"{d} (no live worker offers it)")
        slots["device"] = st.empty()
        dtype = st.selectbox("dtype", list(DTYPES), key=KEYS["dtype"], persist_state="session")
        slots["dtype"] = st.empty()
    with middle:
        st.subheader("Compile matrix")
        dim = "batch sizes" if info.size_dim == "batch" else f"batch sizes (the schedule varies {md(info.size_dim)})"
        batch = st.text_input("Batch sizes", key=KEYS["batch_sizes"], persist_state="session",
                              placeholder="8, 16, 32", help=f"Comma-separated {dim}; each is one job per combination")
        slots["batch_sizes"] = st.empty()
        picked = {}
        for axis in COMPILE_AXES:  # backends, modes, dynamic, fullgraph (lab.axes)
            picked[axis.plural] = st.pills(axis.label, list(axis.values), selection_mode="multi", key=KEYS[axis.plural],
                                           persist_state="session", wrap=True, help=axis.form_help or None)
            slots[axis.plural] = st.empty()
        live_torch = jobs.live_torch_versions(resources.engine())
        options = list(dict.fromkeys([ANY_TORCH, *live_torch, ALL_LIVE, *st.session_state[KEYS["torch_versions"]]]))
        torch_versions = st.pills("Torch versions", options, selection_mode="multi", key=KEYS["torch_versions"],
                                  persist_state="session", wrap=True, format_func=lambda v: TORCH_CHOICES.get(v, md(v)),
                                  help="One job per combination and version; only a worker whose torch matches runs "
                                       "it. any: whichever worker is free. A version from the CLI (--torch 2.14) "
                                       "matches at a component: 2.14 runs on 2.14.1+cu128.")
        slots["torch_versions"] = st.empty()
    with right:
        st.subheader("How to measure")
        cache = st.radio("Compile cache", list(CACHES), key=KEYS["cache"], horizontal=True, persist_state="session",
                         help="cold: a fresh, empty inductor/triton cache for the job (its artifacts are kept in the "
                              "database); warm: the worker's cache; portable: a fresh cache plus the artifacts a "
                              "cold job of the same settings kept, the first call a colleague on another host pays. "
                              "Those artifacts are code: only a worker holding the lab's cache signing key loads "
                              "or keeps them; on one without, a portable job runs as a cold run")
        slots["cache"] = st.empty()
        trace = st.checkbox("Keep the compile trace", key=KEYS["trace"], persist_state="session",
                            help="TORCH_TRACE's lines (capped at 4 MB of text) and tlparse's report, on the job's page; "
                                 "the output code and FX graphs are kept either way")
        slots["trace"] = st.empty()
        schedule = st.text_input("Schedule", key=KEYS["schedule"], persist_state="session", placeholder="32, 64",
                                 help="Optional sizes called in order after the steady state, to show recompiles")
        slots["schedule"] = st.empty()
        traffic = st.text_input("Traffic", key=KEYS["traffic"], persist_state="session", placeholder="uniform:1..512",
                                help="Optional: a stream of calls each job replays eagerly and compiled after its "
                                     "rounds, to see recompiles, the recompile limit's eager fallback and the total "
                                     "under your traffic. uniform:A..B or chat:A..B (drawn once, the same for every "
                                     "job), sizes in order (8, 16, 32), or size: count pairs (128: 40; 512: 3)")
        t2, t3 = st.columns(2)
        calls = t2.text_input("Calls", key=KEYS["calls"], persist_state="session", placeholder="200",
                              help="The stream's calls (a drawn stream: 200 unless given)")
        bucket = t3.text_input("Bucket", key=KEYS["bucket"], persist_state="session", placeholder="none",
                               help="Pad each size up to a multiple of this on the compiled side: fewer graphs, "
                                    "more compute (eager runs each size as it is)")
        slots["traffic"], slots["calls"], slots["bucket"] = st.empty(), st.empty(), st.empty()
        c1, c2, c3 = st.columns(3)
        # no min/max on the widgets: a widget clamps or flags a value out of range with a bare "!" and hands back
        # its last good one, so the form would store what it no longer shows; plan() judges them like the rest
        iters = c1.number_input("Rounds", step=1, key=KEYS["iters"], persist_state="session",
                                help=f"Interleaved eager/compiled rounds (1 to {MAX_ITERS:,})")
        timeout_s = c2.number_input("Timeout (s)", step=60, key=KEYS["timeout_s"], persist_state="session",
                                    help=f"1 to {MAX_TIMEOUT_S:,} s")
        repeat = c3.number_input("Repeat", step=1, key=KEYS["repeat"], persist_state="session",
                                 help=f"Run each combination this many times (1 to {MAX_REPEAT})")
        slots["iters"], slots["timeout_s"], slots["repeat"] = st.empty(), st.empty(), st.empty()
        c4, c5 = st.columns(2)
        reruns = c4.number_input("Re-runs", step=1, key=KEYS["reruns"], persist_state="session",
                                 help="A job disturbed from outside (another process on its cores or GPU, throttled "
                                      "clocks, memory pressure: measured and named) is re-run automatically, up to this "
                                      f"many times per combination (0 to {MAX_REPEAT}; 0: never), the extra process "
                                      "that disagreeing processes call for included")
        process_repeats = c5.number_input(
            "Processes", step=1, key=KEYS["process_repeats"], persist_state="session",
            help="Each combination runs in this many fresh processes: they differ, and the answer's interval holds "
                 "across them. The later ones compile from the first's cache and time the headline alone; "
                 "where they disagree by more than 5%, one more runs. A combination that ran before on this device "
                 "runs in up to 4 more where its earlier processes spread, or in one where 6 or more agreed closely "
                 f"(1 to {MAX_REPEAT}; 1: one process, its interval widened by the device's spread)")
        slots["reruns"], slots["process_repeats"] = st.empty(), st.empty()
        clear_stale_preset_name()
        name = st.text_input("Sweep name", key=KEYS["name"], max_chars=200, persist_state="session")
        if name:
            st.session_state.pop("preset_name_cleared", None)
            mine = {sweep_id for sweep_id, _ in st.session_state.get("submitted") or []}  # just sent from here
            same = [(i, t) for i, t in sweeps.sweeps_named(resources.engine(), name.strip()) if i not in mine]
            if same:  # allowed (the same experiment run again), but the pickers then tell them apart by number
                st.caption(f"{len(same)} sweep{'s are' if len(same) > 1 else ' is'} already named “{md(name.strip())}” "
                           f"(newest #{same[0][0]}, {same[0][1]:%Y-%m-%d %H:%M} UTC): this one gets its own number, "
                           "which the Results and Compare pickers show beside the name.")
        elif st.session_state.get("preset_name_cleared"):
            st.caption("The preset's sweep name was cleared: the form no longer is that preset.")
        slots["name"] = st.empty()
        tags = st.text_input("Tags", key=KEYS["tags"], persist_state="session", placeholder="nightly, a100",
                             help="Words to find the sweep by on Results and with `runner report --tag`: letters, "
                                  "digits and . _ + : / -, commas between them (editable later on the Queue page)")
        slots["tags"] = st.empty()
        note = st.text_area("Note", key=KEYS["note"], persist_state="session", height=68, max_chars=MAX_NOTE,
                            placeholder="why it runs", help="Plain text; editable later on the Queue page")
        slots["note"] = st.empty()

    values = FormValues(model=model, params=params, task=task, device=device, dtype=dtype, batch_sizes=batch,
                        **picked, torch_versions=torch_versions, cache=cache, trace=trace,
                        schedule=schedule, traffic=traffic, calls=calls, bucket=bucket,
                        iters=iters, timeout_s=timeout_s, repeat=repeat, reruns=reruns,
                        process_repeats=process_repeats, name=name, tags=tags, note=note)
    planned = plan(values, catalog, live_torch)
    for error in planned.errors:  # under its field, each one (two fields may hold the same slot: one message)
        _slot(slots, error.field).error(md(message(error)), icon=":material/error:")
    if device not in devices:
        slots["device"].warning(f"No live worker offers {device}: the jobs wait until one does.")
    if cache == "portable":
        signers, live = jobs.bundle_signers(resources.engine())
        if signers == 0:
            slots["cache"].warning("No live worker holds the cache signing key (`work --cache-key-file`): a portable "
                                   "job runs as a cold run, loading no bundle and keeping none.",
                                   icon=":material/key_off:")
        elif signers < live:
            slots["cache"].caption(f"{signers} of {live} live workers hold the cache signing key; a portable job "
                                   "that another one claims runs as a cold run.")

    st.divider()
    count, action = st.columns([3, 1], vertical_alignment="center")
    just_sent = planned.ok and st.session_state.get("submitted_values") == values
    with count:
        in_sweeps = f" in {len(planned.requests)} sweeps" if len(planned.requests) > 1 else ""
        counted = f"{planned.jobs} job{'s' if planned.jobs != 1 else ''}{in_sweeps}"
        st.markdown(f"#### {counted} just queued" if just_sent else f"#### {counted} will be created" if planned.ok
                    else "#### Fix the fields marked in red to see the jobs")
        for note in planned.notes:
            st.caption(note)
        if planned.ok and device == "cpu" and enabled():
            st.caption("CPU timings by the embedded worker share this machine's cores with the dashboard and your "
                       "browser: keep the machine quiet while they run (noisy runs are ringed on Results), or run "
                       "`python -m runner work` on a quiet machine.")
    # the form still holds what was just submitted: a second click (a double click, a reload) must not
    # queue the same sweep twice by accident, so it takes a tick to do it on purpose
    duplicate = just_sent
    if duplicate:
        with count:
            duplicate = not st.checkbox("Queue this same sweep again (it was just submitted; change any field for a "
                                        "new one)", key=f"f_again_{st.session_state.get('submit_count', 0)}")
    clicked = action.button(f"Submit {planned.jobs} job{'s' if planned.jobs != 1 else ''}" if planned.ok else "Submit",
                            type="primary",
                            disabled=not planned.ok or duplicate, key="f_submit", width="stretch")
    if planned.ok:
        with st.expander(f"The {planned.jobs} job{'s' if planned.jobs != 1 else ''}"):
            st.dataframe({"job": planned.labels}, hide_index=True, width="stretch")
    if clicked:
        who = auth.acting()  # the signed-in person is the sweep's submitter (sign-in off: the server's OS user)
        try:
            stored = submit_all(resources.engine(), planned, resources.catalog(resources.engine()),
                                who.id if who else None)
        except SpecError as e:  # the catalog changed between the count and the click
            _slot(slots, e.field).error(md(message(e)), icon=":material/error:")
        except jobs.QueueError as e:  # the lab's queued-job limit (db.admission): nothing was stored
            st.error(md(str(e)), icon=":material/error:")
        else:
            st.session_state["submitted"] = stored
            st.session_state["submitted_values"] = values
            st.session_state.pop("job", None)  # a job picked earlier (Job, Queue's detail: ?job=) is not this sweep's:
            # "Watch them on Queue" opens on the new sweep, not on that job's detail
            st.session_state["submit_count"] = st.session_state.get("submit_count", 0) + 1  # a fresh, unticked box
            st.rerun()  # draw the button disabled now: this sweep is in
    submitted = st.session_state.get("submitted")
    if submitted and just_sent:  # said while the form holds what was sent: a changed form (another preset) is not it
        summaries = {s.id: s for s in sweeps.sweeps(resources.engine(), limit=50)}
        for sweep_id, job_ids in submitted:
            label = summaries[sweep_id].label if sweep_id in summaries else f"#{sweep_id}"
            st.success(f"Sweep {md(label)}: {wording.count(len(job_ids), 'job')} queued ({wording.ids(job_ids)}).",
                       icon=":material/check_circle:")
        ids = [s for s, _ in submitted if s in summaries]
        links = st.columns(4)
        links[0].page_link("screens/queue.py", label="Watch them on Queue", icon=":material/list:",
                           query_params={"qsweep": [summaries[i].label for i in ids]})
        links[1].page_link("screens/results.py", label="Their results", icon=":material/monitoring:",
                           query_params={"sweep": [summaries[i].label for i in ids]})
