//! Custom forms (the table is [`crate::text::forms`]), spelled as `tfrt_opt` prints them. Each
//! printer first checks that the op has exactly the shape the parser gives that form —
//! otherwise the op prints in generic form — so printing and parsing back never changes an op.

use std::fmt::Write as _;

use super::{Printer, attr, function_type, type_list};
use crate::ast::{Attr, Op, Region, Type};
use crate::text::forms::{self, BENCHMARK_KEYS, CHAIN, Form, is_float_type};

/// Whether `types` are exactly `expected`.
fn types_are(types: &[Type], expected: &[&str]) -> bool {
    types.len() == expected.len() && types.iter().zip(expected).all(|(t, e)| t.0 == *e)
}

/// Operand types either omitted or exactly the implied ones.
fn implied(op: &Op, expected: &[&str]) -> bool {
    op.operand_types.is_empty() || types_are(&op.operand_types, expected)
}

/// Operand types listed one per operand.
fn listed(op: &Op) -> bool {
    op.operand_types.len() == op.operands.len()
}

/// The op's attributes, in the order of `names`, if it has exactly those.
fn attrs_exactly<'o>(op: &'o Op, names: &[&str]) -> Option<Vec<&'o Attr>> {
    if op.attrs.len() != names.len() {
        return None;
    }
    names.iter().map(|n| op.attrs.iter().find(|a| a.name == *n).map(|a| &a.value)).collect()
}

/// A plain op: no attributes, no regions.
fn plain(op: &Op) -> bool {
    op.attrs.is_empty() && op.regions.is_empty()
}

/// Each region has block arguments of exactly `types`.
fn region_args_typed(regions: &[Region], types: &[Type]) -> bool {
    regions.iter().all(|r| r.args.len() == types.len() && r.args.iter().zip(types).all(|((_, t), e)| t == e))
}

fn is_symbol(a: &Attr) -> bool {
    matches!(a, Attr::Symbol(_))
}

fn is_int(a: &Attr, ty: &str) -> bool {
    matches!(a, Attr::Int { ty: t, .. } if t.0 == ty)
}

impl Printer<'_> {
    /// Prints `op` in its custom form if it has one and fits it; `last` is whether it ends its
    /// block (a bare `tfrt.return` elsewhere would swallow the next op's results).
    pub(super) fn custom(&mut self, op: &Op, operands: &[String], last: bool) -> bool {
        let Some(form) = forms::form(&op.name) else {
            return false;
        };
        let no_operands = op.operands.is_empty();
        match form {
            Form::Implied { operands: types, results } => {
                let ok = plain(op)
                    && op.operands.len() == types.len()
                    && implied(op, &types)
                    && types_are(&op.result_types, &results);
                self.simple(ok, &op.name, &operands.join(", "))
            }
            Form::Constant(t) => self.constant(op, t),
            Form::Valued { operands: types, results, attr, array } => {
                self.valued(op, operands, (&types, &results), attr, array)
            }
            Form::MergeChains => {
                let ok = plain(op) && !no_operands && listed(op) && types_are(&op.result_types, &[CHAIN]);
                self.values_types(ok, op, operands)
            }
            Form::Return => {
                let ok = plain(op) && op.result_types.is_empty() && listed(op) && (last || !no_operands);
                self.values_types(ok, op, operands)
            }
            Form::Call | Form::Once => self.call_like(op, operands),
            Form::If => self.if_op(op, operands),
            Form::Repeat => self.repeat(op, operands),
            Form::Cond | Form::Case | Form::While => self.functional(op, operands),
            Form::ParallelFor | Form::ParallelCall => self.parallel(op, operands),
            Form::DoAsync => self.do_async(op, operands),
            Form::Benchmark => self.benchmark(op, operands),
            Form::TestCost => self.test_cost(op, operands),
        }
    }

    /// `name rest` when `ok`.
    fn simple(&mut self, ok: bool, name: &str, rest: &str) -> bool {
        if ok {
            self.out.push_str(name);
            if !rest.is_empty() {
                self.out.push(' ');
                self.out.push_str(rest);
            }
        }
        ok
    }

    /// `tfrt.constant.T LIT`.
    fn constant(&mut self, op: &Op, t: &str) -> bool {
        let ok = no_regions(op) && op.operands.is_empty() && types_are(&op.result_types, &[t]);
        let lit = match attrs_exactly(op, &["value"]).as_deref() {
            Some([Attr::Bool(b)]) if t == "i1" => b.to_string(),
            Some([Attr::Int { value, ty }]) if ty.0 == t && !is_float_type(t) && t != "i1" => {
                attr::int(*value, t)
            }
            Some([Attr::Float { value, ty }]) if ty.0 == t && is_float_type(t) => attr::float(*value, t),
            _ => return false,
        };
        self.simple(ok, &op.name, &lit)
    }

    /// `NAME %a, ... VALUE` with operand and result types `(types, results)` and the value of
    /// attribute `attr` (an array when `array`): `ts.build_shape [1, 57, 92]`,
    /// `tfrt_dht.fill_tensor_with_constant.f32 %0, %1 1.000000e+00 : f32`.
    fn valued(
        &mut self,
        op: &Op,
        operands: &[String],
        (types, results): (&[&str], &[&str]),
        name: &str,
        array: bool,
    ) -> bool {
        let attrs = attrs_exactly(op, &[name]);
        let Some([value]) = attrs.as_deref() else {
            return false;
        };
        let ok = no_regions(op)
            && (!array || matches!(value, Attr::Array(_)))
            && op.operands.len() == types.len()
            && implied(op, types)
            && types_are(&op.result_types, results);
        let mut rest = operands.join(", ");
        if !rest.is_empty() {
            rest.push(' ');
        }
        attr::custom_value(&mut rest, value);
        self.simple(ok, &op.name, &rest)
    }

    /// `name [%a, ... : T, ...]` (merge.chains, return).
    fn values_types(&mut self, ok: bool, op: &Op, operands: &[String]) -> bool {
        if ok {
            self.out.push_str(&op.name);
            if !operands.is_empty() {
                let _ = write!(self.out, " {} : ", operands.join(", "));
                type_list(&mut self.out, &op.operand_types);
            }
        }
        ok
    }

    /// `tfrt.call @f(%a) : (T) -> R`, `tfrt.once @f(%a) : (T) -> (R)`.
    fn call_like(&mut self, op: &Op, operands: &[String]) -> bool {
        let key = if op.name == "tfrt.call" { "callee" } else { "function" };
        let attrs = attrs_exactly(op, &[key]);
        let Some([Attr::Symbol(f)]) = attrs.as_deref() else {
            return false;
        };
        if !no_regions(op) || !listed(op) {
            return false;
        }
        let _ = write!(self.out, "{} {}({}) : ", op.name, attr::symbol(f), operands.join(", "));
        function_type(&mut self.out, &op.operand_types, &op.result_types, op.name == "tfrt.once");
        true
    }

    /// `%c, %a... [attributes {...}] : (T...) -> (R...)  { then } else  { else }`.
    fn if_op(&mut self, op: &Op, operands: &[String]) -> bool {
        let ok = !op.operands.is_empty()
            && listed(op)
            && op.operand_types.first().is_some_and(|t| t.0 == "i1")
            && op.regions.len() == 2
            && region_args_typed(&op.regions, op.operand_types.get(1..).unwrap_or(&[]));
        if !ok {
            return false;
        }
        let _ = write!(self.out, "tfrt.if {}", operands.join(", "));
        if !op.attrs.is_empty() {
            self.out.push_str(" attributes ");
            attr::dict(&mut self.out, &op.attrs);
        }
        self.out.push_str(" : ");
        function_type(&mut self.out, op.operand_types.get(1..).unwrap_or(&[]), &op.result_types, true);
        let args: Vec<&String> = operands.iter().skip(1).collect();
        for (i, region) in op.regions.iter().enumerate() {
            self.out.push_str(if i == 0 { "  " } else { " else  " });
            self.shadowed_region(region, &args);
        }
        true
    }

    /// `tfrt.repeat.i32 %n, %a... : T... { body }` / `tfrt.repeat.i32 %n { body }`.
    fn repeat(&mut self, op: &Op, operands: &[String]) -> bool {
        let loop_types = op.operand_types.get(1..).unwrap_or(&[]);
        let ok = op.attrs.is_empty()
            && !op.operands.is_empty()
            && listed(op)
            && op.operand_types.first().is_some_and(|t| t.0 == "i32")
            && loop_types == op.result_types.as_slice()
            && op.regions.len() == 1
            && region_args_typed(&op.regions, loop_types);
        if !ok {
            return false;
        }
        let _ = write!(self.out, "tfrt.repeat.i32 {}", operands.join(", "));
        if !loop_types.is_empty() {
            self.out.push_str(" : ");
            type_list(&mut self.out, loop_types);
        }
        self.out.push(' ');
        let args: Vec<&String> = operands.iter().skip(1).collect();
        self.shadowed_region(&op.regions[0], &args);
        true
    }

    /// `tfrt.cond %c @t @f (%a...)`, `tfrt.case %i [@f0, ...] (%a...)`,
    /// `tfrt.while %c @body(%a...) parallel_iterations(N)`, then `: (T...) -> (R...)`.
    fn functional(&mut self, op: &Op, operands: &[String]) -> bool {
        // The first operand's type, what precedes the argument list, what follows it.
        let (first_type, head, tail) = match op.name.as_str() {
            "tfrt.cond" => match attrs_exactly(op, &["a_true_fn", "b_false_fn"]).as_deref() {
                Some([Attr::Symbol(t), Attr::Symbol(f)]) => {
                    ("i1", format!("{} {} (", attr::symbol(t), attr::symbol(f)), String::new())
                }
                _ => return false,
            },
            "tfrt.case" => match attrs_exactly(op, &["branches"]).as_deref() {
                Some([branches @ Attr::Array(items)]) if items.iter().all(is_symbol) => {
                    let mut text = String::new();
                    attr::attr(&mut text, branches);
                    ("i32", format!("{text} ("), String::new())
                }
                _ => return false,
            },
            _ => match attrs_exactly(op, &["body_fn", "parallel_iterations"]).as_deref() {
                Some([Attr::Symbol(body), Attr::Int { value, ty }]) if ty.0 == "i64" => {
                    ("i1", format!("{}(", attr::symbol(body)), format!(" parallel_iterations({value})"))
                }
                _ => return false,
            },
        };
        let ok = !op.operands.is_empty()
            && listed(op)
            && op.regions.is_empty()
            && op.operand_types.first().is_some_and(|t| t.0 == first_type);
        if !ok {
            return false;
        }
        let rest = operands.get(1..).unwrap_or(&[]).join(", ");
        let first = operands.first().map(String::as_str).unwrap_or("");
        let _ = write!(self.out, "{} {first} {head}{rest}){tail} : ", op.name);
        function_type(&mut self.out, op.operand_types.get(1..).unwrap_or(&[]), &op.result_types, true);
        true
    }

    /// `tfrt.parallel_for.i32 %s to %e fixed %b[, %a... : T...] { body }` and
    /// `tfrt.parallel_call.i32 %s to %e fixed %b @f(%a...)[ : T...]`.
    fn parallel(&mut self, op: &Op, operands: &[String]) -> bool {
        let is_for = op.name == "tfrt.parallel_for.i32";
        let extra_types = op.operand_types.get(3..).unwrap_or(&[]);
        let callee = if is_for {
            if !op.attrs.is_empty() || op.regions.len() != 1 {
                return false;
            }
            let mut body_types = vec![Type("i32".into()), Type("i32".into())];
            body_types.extend(extra_types.iter().cloned());
            if !region_args_typed(&op.regions, &body_types) {
                return false;
            }
            None
        } else {
            match attrs_exactly(op, &["callee"]).as_deref() {
                Some([Attr::Symbol(f)]) if op.regions.is_empty() => Some(attr::symbol(f)),
                _ => return false,
            }
        };
        let ok = op.operands.len() >= 3
            && listed(op)
            && types_are(op.operand_types.get(..3).unwrap_or(&[]), &["i32"; 3])
            && types_are(&op.result_types, &[CHAIN]);
        if !ok {
            return false;
        }
        let (range, extra) = operands.split_at(3);
        let _ = write!(self.out, "{} {} to {} fixed {}", op.name, range[0], range[1], range[2]);
        match &callee {
            Some(f) => {
                let _ = write!(self.out, " {f}({})", extra.join(", "));
            }
            None if !extra.is_empty() => {
                let _ = write!(self.out, ", {}", extra.join(", "));
            }
            None => {}
        }
        if !extra.is_empty() {
            self.out.push_str(" : ");
            type_list(&mut self.out, extra_types);
        }
        if is_for {
            self.out.push(' ');
            let args: Vec<&String> = range.iter().take(2).chain(extra).collect();
            self.shadowed_region(&op.regions[0], &args);
        }
        true
    }

    /// `tfrt_test.do.async %a... [attributes {...}] : (T...) -> (R...) { body }`.
    fn do_async(&mut self, op: &Op, operands: &[String]) -> bool {
        let ok = listed(op) && op.regions.len() == 1 && region_args_typed(&op.regions, &op.operand_types);
        if !ok {
            return false;
        }
        self.out.push_str("tfrt_test.do.async");
        if !operands.is_empty() {
            let _ = write!(self.out, " {}", operands.join(", "));
        }
        if !op.attrs.is_empty() {
            self.out.push_str(" attributes ");
            attr::dict(&mut self.out, &op.attrs);
        }
        self.out.push_str(" : ");
        function_type(&mut self.out, &op.operand_types, &op.result_types, true);
        self.out.push(' ');
        let args: Vec<&String> = operands.iter().collect();
        self.shadowed_region(&op.regions[0], &args);
        true
    }

    /// `tfrt_test.benchmark "NAME"(%a : T, ...) duration_secs = D, max_count = M,
    /// num_warmup_runs = W  { body }`.
    fn benchmark(&mut self, op: &Op, operands: &[String]) -> bool {
        let mut names = vec!["name"];
        names.extend(BENCHMARK_KEYS);
        let Some(values) = attrs_exactly(op, &names) else {
            return false;
        };
        let Some((Attr::String(bench), keys)) = values.split_first() else {
            return false;
        };
        let ok = keys.iter().all(|k| is_int(k, "i32"))
            && listed(op)
            && types_are(&op.result_types, &[CHAIN])
            && op.regions.len() == 1
            && region_args_typed(&op.regions, &op.operand_types);
        if !ok {
            return false;
        }
        let args: Vec<String> =
            operands.iter().zip(&op.operand_types).map(|(v, t)| format!("{v} : {}", t.0)).collect();
        let _ = write!(self.out, "tfrt_test.benchmark {}({})", attr::string_lit(bench), args.join(", "));
        for (i, (key, value)) in BENCHMARK_KEYS.iter().zip(keys).enumerate() {
            if let Attr::Int { value, .. } = value {
                let _ = write!(self.out, "{} {key} = {value}", if i == 0 { "" } else { "," });
            }
        }
        self.out.push_str("  ");
        let refs: Vec<&String> = operands.iter().collect();
        self.shadowed_region(&op.regions[0], &refs);
        true
    }

    /// `tfrt_test.test_cost %a... {attrs} : T...`.
    fn test_cost(&mut self, op: &Op, operands: &[String]) -> bool {
        let ok = op.regions.is_empty()
            && listed(op)
            && types_are(&op.result_types, &["i32"])
            && !(operands.is_empty() && op.attrs.is_empty());
        if !ok {
            return false;
        }
        self.out.push_str("tfrt_test.test_cost");
        if !operands.is_empty() {
            let _ = write!(self.out, " {}", operands.join(", "));
        }
        if !op.attrs.is_empty() {
            self.out.push(' ');
            attr::dict(&mut self.out, &op.attrs);
        }
        if !operands.is_empty() {
            self.out.push_str(" : ");
            type_list(&mut self.out, &op.operand_types);
        }
        true
    }
}

/// No regions (attributes are checked separately).
fn no_regions(op: &Op) -> bool {
    op.regions.is_empty()
}
