//! `hostrt graph`: a program's dataflow as Graphviz DOT (or SVG through Graphviz's `dot`),
//! and an imported model's memory plan as a timeline (docs/profiling.md, "Graphs and the
//! memory plan").

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use hostrt_compiler::ast::{Loc, Module, Op, Region};
use hostrt_import::Report;

/// What `hostrt graph` writes.
pub struct GraphOptions<'a> {
    /// `--dot`: DOT text on standard output.
    pub dot: bool,
    /// `--svg FILE`: the picture, drawn by `dot -Tsvg`.
    pub svg: Option<&'a Path>,
    /// `--plan`: the memory plan as a timeline.
    pub plan: bool,
}

/// `hostrt graph INPUT [--dot] [--svg FILE] [--plan]`.
pub fn graph(input: &Path, opts: &GraphOptions<'_>) -> Result<(), String> {
    let name = crate::display_name(input);
    let bytes = crate::read_input(&input.to_path_buf())?;
    let imported = crate::infer::import_model(input, &bytes, hostrt_import::ImportOptions::default(), &[])?;
    if opts.plan {
        let r = imported.as_ref().map(|i| &i.report).ok_or_else(|| {
            format!("{name}: --plan shows an imported model's arena; this is not a .tflite or .onnx model")
        })?;
        say!("{}", plan_text(r).trim_end());
    }
    if !opts.dot && opts.svg.is_none() {
        return Ok(());
    }
    let dot = match &imported {
        Some(i) => model_dot(&i.report),
        None => {
            let (module, streams) = module_of(input, bytes)?;
            program_dot(&module, streams)
        }
    };
    if opts.dot {
        say!("{}", dot.trim_end());
    }
    if let Some(svg) = opts.svg {
        write_svg(&dot, svg)?;
        say!("wrote {}", svg.display());
    }
    Ok(())
}

/// The module of a `.bef` or `.mlir` file (text parsed as written, so values keep their
/// names), and whether its kernels run in the streams the compiler assigns (text, and BEF
/// with a stream section), or all in one (BEF compiled without streams).
fn module_of(input: &Path, bytes: Vec<u8>) -> Result<(Module, bool), String> {
    let name = crate::display_name(input);
    if !bytes.starts_with(&hostrt_core::bef::format::MAGIC) {
        let text =
            String::from_utf8(bytes).map_err(|e| format!("{name}: not BEF, and not UTF-8 text: {e}"))?;
        return Ok((hostrt_compiler::text::parse(&name, &text).map_err(|e| e.to_string())?, true));
    }
    let bef = crate::bef_of(input, bytes)?;
    let aligned = hostrt_std::AlignedBytes::new(&bef);
    let scratch = crate::scratch_allocator(bef.len() + 64)?;
    let file = hostrt_core::bef::BefFile::load_unresolved(aligned.as_bytes(), scratch)
        .map_err(|e| format!("{name}: {e}"))?;
    let streams = (0..file.num_functions() as u32)
        .filter_map(|i| file.function(i))
        .any(|f| !f.is_native() && !f.kernel_streams().is_empty());
    Ok((hostrt_compiler::bef::decode(&file).map_err(|e| format!("{name}: {e}"))?, streams))
}

/// Fill colours of streams 0, 1, ... (cycled).
const STREAM_COLOURS: [&str; 8] =
    ["#ffffff", "#cfe8ff", "#d8f5d0", "#ffe3c4", "#f0d6f5", "#fff6b8", "#d4f1f1", "#f5d0d0"];

/// Draws `dot` into `svg` with Graphviz.
fn write_svg(dot: &str, svg: &Path) -> Result<(), String> {
    use std::io::Write as _;
    let mut child = std::process::Command::new("dot")
        .args(["-Tsvg", "-o"])
        .arg(svg)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!("--svg needs Graphviz's `dot` on the PATH ({e}); --dot prints the graph as text")
        })?;
    child.stdin.take().ok_or("dot: no stdin")?.write_all(dot.as_bytes()).map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("dot failed ({status})"));
    }
    Ok(())
}

/// `s` as a DOT string (quoted, escaped).
fn quoted(s: &str) -> String {
    let mut q = String::from('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                q.push('\\');
                q.push(c);
            }
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// `s` cut to 48 characters (a layer's `op#N OPERATOR:` and the start of its name).
fn short(s: &str) -> String {
    if s.chars().count() <= 48 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(47).collect::<String>())
    }
}

/// An imported model: a node per kernel (its layer and kernel), an edge per arena buffer from
/// the kernel that writes it to each that reads it, labelled with its name, type, size,
/// offset and lifetime.
fn model_dot(r: &Report) -> String {
    let mut out = String::from(
        "digraph model {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"monospace\", fontsize=8];\n",
    );
    let _ = writeln!(out, "  label={};", quoted(&format!("activation arena {} bytes", r.arena_bytes)));
    let mut writer = HashMap::new();
    for (i, s) in r.steps.iter().enumerate() {
        let _ = writeln!(out, "  s{i} [label={}];", quoted(&format!("{}\n{}", short(&s.loc), s.kernel)));
        if let Some(t) = s.writes {
            writer.insert(t, i);
        }
    }
    for (i, s) in r.steps.iter().enumerate() {
        for &t in &s.reads {
            let b = &r.tensors[t];
            let label = format!(
                "{}\n{} {} B @{}\nsteps {}..{}",
                short(&b.name),
                b.ty,
                b.bytes,
                b.offset,
                b.first,
                b.last
            );
            match writer.get(&t) {
                Some(&w) => {
                    let _ = writeln!(out, "  s{w} -> s{i} [label={}];", quoted(&label));
                }
                // Scratch space: written and read by its own step.
                None => {
                    let _ = writeln!(out, "  t{t} [shape=note, label={}];\n  t{t} -> s{i};", quoted(&label));
                }
            }
        }
    }
    out.push_str("}\n");
    out
}

/// A program: a cluster per function, a node per kernel (name, location and stream, the
/// stream also as its colour), an edge per value from the kernel or argument that defines it
/// to each kernel that uses it, labelled with its type. Regions' kernels (`tfrt.if` bodies)
/// draw inside their function. Without `streams` (BEF compiled without them) every kernel
/// is in stream 0.
fn program_dot(m: &Module, streams: bool) -> String {
    let mut out = String::from(
        "digraph program {\n  rankdir=TB;\n  compound=true;\n  node [shape=box, style=filled, fillcolor=\"#ffffff\", fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"monospace\", fontsize=8];\n",
    );
    let label = if streams {
        "a colour per stream: kernels of one stream run one after another on one thread"
    } else {
        "compiled without streams: every kernel in stream 0"
    };
    let _ = writeln!(out, "  label={};", quoted(label));
    let streams_of = |func: Option<&hostrt_compiler::ast::Func>, region: &Region| {
        if streams {
            hostrt_compiler::bef::kernel_streams(m, func, region)
        } else {
            // Every kernel but the terminator, as the assignment numbers them.
            let returns = region.ops.last().is_some_and(|op| op.name == "tfrt.return");
            vec![0; region.ops.len() - usize::from(returns)]
        }
    };
    let mut next = 0usize;
    for (f, func) in m.funcs.iter().enumerate() {
        let _ = writeln!(out, "  subgraph cluster_{f} {{\n    label={};", quoted(&format!("@{}", func.name)));
        // Value name -> (defining node, type).
        let mut defs: HashMap<String, (String, String)> = HashMap::new();
        for (a, (name, ty)) in func.args.iter().enumerate() {
            let node = format!("f{f}_arg{a}");
            let _ = writeln!(out, "    {node} [shape=ellipse, label={}];", quoted(&format!("%{name}")));
            defs.insert(name.clone(), (node, ty.0.clone()));
        }
        if let Some(body) = &func.body {
            region_dot(&mut out, body, &streams_of(Some(func), body), &streams_of, &mut defs, &mut next);
        }
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}

/// The kernels of `region` into `out`, numbering nodes from `next`; `streams` are its
/// kernels' streams, `streams_of` gives those of the regions inside it.
fn region_dot(
    out: &mut String,
    region: &Region,
    streams: &[u32],
    streams_of: &dyn Fn(Option<&hostrt_compiler::ast::Func>, &Region) -> Vec<u32>,
    defs: &mut HashMap<String, (String, String)>,
    next: &mut usize,
) {
    for (name, ty) in &region.args {
        defs.entry(name.clone()).or_insert_with(|| (String::new(), ty.0.clone()));
    }
    for (k, op) in region.ops.iter().enumerate() {
        let node = format!("k{next}");
        *next += 1;
        match streams.get(k) {
            Some(&s) => {
                let label = format!("{}\nstream {s}", op_label(op));
                let colour = STREAM_COLOURS[s as usize % STREAM_COLOURS.len()];
                let _ = writeln!(out, "    {node} [label={}, fillcolor={}];", quoted(&label), quoted(colour));
            }
            None => {
                let _ = writeln!(out, "    {node} [label={}];", quoted(&op_label(op)));
            }
        }
        for (i, operand) in op.operands.iter().enumerate() {
            let Some((from, ty)) = defs.get(&operand.name) else { continue };
            if from.is_empty() {
                continue; // a region argument: bound by its op
            }
            let ty = op.operand_types.get(i).map_or(ty.as_str(), |t| t.0.as_str());
            let _ = writeln!(out, "    {from} -> {node} [label={}];", quoted(ty));
        }
        let mut types = op.result_types.iter();
        for group in &op.results {
            let ty = types.next().map_or(String::new(), |t| t.0.clone());
            defs.insert(group.name.clone(), (node.clone(), ty));
        }
        for r in &op.regions {
            region_dot(out, r, &streams_of(None, r), streams_of, defs, next);
        }
    }
}

/// A kernel's label: its name, then its location.
fn op_label(op: &Op) -> String {
    match &op.loc {
        Loc::Name(n) => format!("{}\n{n}", op.name),
        Loc::FileLineCol { file, line, col } => format!("{}\n{file}:{line}:{col}", op.name),
        Loc::Fused { name, line, col, .. } => format!("{}\n{name} ({line}:{col})", op.name),
        _ => op.name.clone(),
    }
}

/// The memory plan as text: per step the bytes live; per buffer its place and a bar of the
/// steps it lives through; then the step where the most bytes are live, which sets the
/// arena's size.
fn plan_text(r: &Report) -> String {
    let mut out = String::new();
    let steps = r.steps.len();
    let live: Vec<usize> = (0..steps)
        .map(|s| r.tensors.iter().filter(|t| t.first <= s && s <= t.last).map(|t| t.bytes).sum())
        .collect();
    let unplanned: usize = r.tensors.iter().map(|t| t.bytes).sum();
    let _ = writeln!(
        out,
        "activation arena: {} bytes for {} buffers of {} bytes in all, over {} steps",
        r.arena_bytes,
        r.tensors.len(),
        unplanned,
        steps
    );
    let _ = writeln!(out, "\nstep  live bytes  kernel");
    for (i, s) in r.steps.iter().enumerate() {
        let _ = writeln!(out, "{i:>4}  {:>10}  {} {}", live[i], s.loc, s.kernel);
    }
    let _ = writeln!(out, "\nbuffers by offset (a # per step alive, steps 0..{}):", steps.saturating_sub(1));
    let mut order: Vec<usize> = (0..r.tensors.len()).collect();
    order.sort_by_key(|&t| (r.tensors[t].offset, r.tensors[t].first));
    for t in order {
        let b = &r.tensors[t];
        let bar: String = (0..steps).map(|s| if b.first <= s && s <= b.last { '#' } else { '.' }).collect();
        let _ = writeln!(
            out,
            "[{:>8}, {:>8})  {:>8} B  {bar}  {:<20}  {}",
            b.offset,
            b.offset + b.bytes,
            b.bytes,
            b.ty,
            b.name
        );
    }
    if let Some((peak_step, &peak)) = live.iter().enumerate().max_by_key(|&(i, &b)| (b, std::cmp::Reverse(i)))
    {
        let at = &r.steps[peak_step];
        let _ = writeln!(
            out,
            "\nmost bytes live: {peak} at step {peak_step} ({}); the arena is {} bytes, {} above that (alignment and placement)",
            at.loc,
            r.arena_bytes,
            r.arena_bytes.saturating_sub(peak)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostrt_import::{PlannedStep, PlannedTensor};

    fn tensor(name: &str, bytes: usize, offset: usize, (first, last): (usize, usize)) -> PlannedTensor {
        PlannedTensor { name: name.into(), ty: "f32 [4]".into(), bytes, offset, first, last }
    }

    fn step(loc: &str, reads: Vec<usize>, writes: Option<usize>) -> PlannedStep {
        PlannedStep { kernel: "nn.k".into(), loc: loc.into(), reads, writes }
    }

    #[test]
    fn the_plan_names_the_step_that_sets_the_arena() {
        let r = Report {
            arena_bytes: 48,
            steps: vec![
                step("input#0", vec![], Some(0)),
                step("op#0 ADD", vec![0], Some(1)),
                step("out", vec![1], None),
            ],
            tensors: vec![tensor("x", 16, 0, (0, 1)), tensor("y", 32, 16, (1, 2))],
            ..Report::default()
        };
        let text = plan_text(&r);
        assert!(text.contains("[       0,       16)        16 B  ##.  f32 [4]               x"), "{text}");
        assert!(text.contains("most bytes live: 48 at step 1 (op#0 ADD)"), "{text}");
        let dot = model_dot(&r);
        assert!(dot.contains("s0 -> s1 [label=\"x\\nf32 [4] 16 B @0\\nsteps 0..1\"];"), "{dot}");
    }

    #[test]
    fn a_programs_values_are_edges_with_their_types() {
        let text = "func.func @f(%a: i32) -> i32 {\n  %b = \"tfrt.add.i32\"(%a, %a) : (i32, i32) -> i32\n  tfrt.return %b : i32\n}\n";
        let module = hostrt_compiler::text::parse("f.mlir", text).unwrap();
        let dot = program_dot(&module, true);
        assert!(dot.contains("f0_arg0 -> k0 [label=\"i32\"];"), "{dot}");
        assert!(dot.contains("k0 -> k1 [label=\"i32\"];"), "{dot}");
        assert!(dot.contains("tfrt.add.i32\\nf.mlir:2:"), "{dot}");
        assert!(dot.contains("\\nstream 0\", fillcolor=\"#ffffff\"]"), "{dot}");
        let one = program_dot(&module, false);
        assert!(one.contains("label=\"compiled without streams: every kernel in stream 0\";"), "{one}");
    }
}
