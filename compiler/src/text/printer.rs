//! AST to MLIR text in `tfrt_opt` style: two-space indentation, function and
//! block arguments renamed `%argN`, results renumbered `%0`, `%1`, … in definition order,
//! sorted attribute dictionaries, custom forms where they reproduce the op exactly and the
//! generic form otherwise.

pub(in crate::text) mod attr;
mod custom;
mod dense;

use std::collections::HashMap;
use std::fmt::Write as _;

use super::PrintOptions;
use crate::ast::{Func, Module, Op, Region, Type, ValueRef};

pub(super) fn print_module(module: &Module, opts: &PrintOptions) -> String {
    let mut p =
        Printer { out: String::new(), opts, indent: 0, scopes: Vec::new(), next_value: 0, next_arg: 0 };
    p.out.push_str("module ");
    if !module.attrs.is_empty() {
        p.out.push_str("attributes ");
        attr::dict(&mut p.out, &module.attrs);
        p.out.push(' ');
    }
    p.out.push_str("{\n");
    p.indent = 1;
    for func in &module.funcs {
        p.func(func);
    }
    p.out.push_str("}\n");
    p.out
}

struct Printer<'o> {
    out: String,
    opts: &'o PrintOptions,
    indent: usize,
    /// Innermost last: AST value name (or `name#N` for a pack-element block argument) to
    /// printed text.
    scopes: Vec<HashMap<String, String>>,
    next_value: usize,
    next_arg: usize,
}

/// `(A, B) -> R`; results bare when there is exactly one unless `paren_results`.
fn function_type(out: &mut String, inputs: &[Type], results: &[Type], paren_results: bool) {
    out.push('(');
    type_list(out, inputs);
    out.push_str(") -> ");
    result_types(out, results, paren_results);
}

/// `R`, or `(R, ...)` / `()`.
fn result_types(out: &mut String, results: &[Type], paren: bool) {
    if let [single] = results
        && !paren
    {
        out.push_str(&single.0);
    } else {
        out.push('(');
        type_list(out, results);
        out.push(')');
    }
}

fn type_list(out: &mut String, types: &[Type]) {
    for (i, t) in types.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&t.0);
    }
}

impl Printer<'_> {
    fn pad(&mut self) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
    }

    fn define(&mut self, name: &str, text: String) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), text);
        }
    }

    /// The printed text of a use: its (renamed) definition, innermost scope first; unknown
    /// names are printed as written.
    fn lookup(&self, v: &ValueRef) -> String {
        let suffix = v.index.map(|i| format!("#{i}")).unwrap_or_default();
        for scope in self.scopes.iter().rev() {
            if !suffix.is_empty()
                && let Some(text) = scope.get(&format!("{}{suffix}", v.name))
            {
                return text.clone();
            }
            if let Some(text) = scope.get(&v.name) {
                return format!("{text}{suffix}");
            }
        }
        format!("%{}{suffix}", v.name)
    }

    fn loc(&mut self, loc: &crate::ast::Loc) {
        if self.opts.locations {
            self.out.push(' ');
            attr::loc(&mut self.out, loc);
        }
    }

    fn func(&mut self, func: &Func) {
        self.next_value = 0;
        self.next_arg = 0;
        self.scopes = vec![HashMap::new()];
        self.pad();
        self.out.push_str("func.func ");
        if func.body.is_none() {
            self.out.push_str("private ");
        }
        self.out.push_str(&attr::symbol(&func.name));
        self.out.push('(');
        for (i, (name, ty)) in func.args.iter().enumerate() {
            let text = format!("%arg{i}");
            if i > 0 {
                self.out.push_str(", ");
            }
            let _ = write!(self.out, "{text}: {}", ty.0);
            self.define(name, text);
        }
        self.next_arg = func.args.len();
        self.out.push(')');
        if !func.results.is_empty() {
            self.out.push_str(" -> ");
            result_types(&mut self.out, &func.results, false);
        }
        if !func.attrs.is_empty() {
            self.out.push_str(" attributes ");
            attr::dict(&mut self.out, &func.attrs);
        }
        if let Some(body) = &func.body {
            // The body's block arguments are the function's arguments.
            for (i, (name, _)) in body.args.iter().enumerate() {
                self.define(name, format!("%arg{i}"));
            }
            self.out.push_str(" {\n");
            self.indent += 1;
            self.ops(&body.ops);
            self.indent -= 1;
            self.pad();
            self.out.push('}');
        }
        self.loc(&func.loc);
        self.out.push('\n');
    }

    fn ops(&mut self, ops: &[Op]) {
        for (i, op) in ops.iter().enumerate() {
            self.op(op, i + 1 == ops.len());
        }
    }

    /// One op line (plus its regions); `last` says whether it ends its block.
    fn op(&mut self, op: &Op, last: bool) {
        self.pad();
        let operands: Vec<String> = op.operands.iter().map(|v| self.lookup(v)).collect();
        if let [group] = &op.results[..] {
            let text = format!("%{}", self.next_value);
            self.next_value += 1;
            self.out.push_str(&text);
            if group.count != 1 {
                let _ = write!(self.out, ":{}", group.count);
            }
            self.define(&group.name, text);
        } else if !op.results.is_empty() {
            // Results written in several groups print as one, `%0:2` with uses `%0#1`, as
            // MLIR (and so tfrt_opt) numbers an op's results.
            let base = format!("%{}", self.next_value);
            self.next_value += 1;
            let total: usize = op.results.iter().map(|g| g.count as usize).sum();
            let _ = write!(self.out, "{base}:{total}");
            let mut at = 0;
            for group in &op.results {
                self.define(&group.name, format!("{base}#{at}"));
                for j in 0..group.count as usize {
                    self.define(&format!("{}#{j}", group.name), format!("{base}#{}", at + j));
                }
                at += group.count as usize;
            }
        }
        if !op.results.is_empty() {
            self.out.push_str(" = ");
        }
        if !self.custom(op, &operands, last) {
            self.generic(op, &operands);
        }
        self.loc(&op.loc);
        self.out.push('\n');
    }

    /// `"name"(%a) ({...}) {attrs} : (T) -> R`.
    fn generic(&mut self, op: &Op, operands: &[String]) {
        self.out.push_str(&attr::string_lit(&op.name));
        let _ = write!(self.out, "({})", operands.join(", "));
        if !op.regions.is_empty() {
            self.out.push_str(" (");
            for (i, region) in op.regions.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.generic_region(region);
            }
            self.out.push(')');
        }
        if !op.attrs.is_empty() {
            self.out.push(' ');
            attr::dict(&mut self.out, &op.attrs);
        }
        self.out.push_str(" : ");
        function_type(&mut self.out, &op.operand_types, &op.result_types, false);
    }

    /// `{ ^bb0(%argN: T, ...): ops }` with fresh argument names.
    fn generic_region(&mut self, region: &Region) {
        self.scopes.push(HashMap::new());
        self.out.push_str("{\n");
        if !region.args.is_empty() {
            self.pad();
            self.out.push_str("^bb0(");
            for (i, (name, ty)) in region.args.iter().enumerate() {
                let text = format!("%arg{}", self.next_arg);
                self.next_arg += 1;
                if i > 0 {
                    self.out.push_str(", ");
                }
                let _ = write!(self.out, "{text}: {}", ty.0);
                self.define(name, text);
            }
            self.out.push_str("):\n");
        }
        self.region_ops(region);
        self.scopes.pop();
    }

    /// `{ ops }` of a custom form whose block arguments print as `arg_texts` (the names of the
    /// operands they are bound to).
    fn shadowed_region(&mut self, region: &Region, arg_texts: &[&String]) {
        let scope =
            region.args.iter().zip(arg_texts).map(|((name, _), text)| (name.clone(), (*text).clone()));
        self.scopes.push(scope.collect());
        self.out.push_str("{\n");
        self.region_ops(region);
        self.scopes.pop();
    }

    /// The ops of a region and its closing brace.
    fn region_ops(&mut self, region: &Region) {
        self.indent += 1;
        self.ops(&region.ops);
        self.indent -= 1;
        self.pad();
        self.out.push('}');
    }
}
